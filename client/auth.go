package client

import (
	"context"
	"net/http"
)

// WithBearerToken sends token (a JWT, an API key or a static token) as
// "Authorization: Bearer <token>" on every request.
func WithBearerToken(token string) ClientOption {
	return WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+token)
		return nil
	})
}
