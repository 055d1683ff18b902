package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tether-run/tether/internal/fault"
)

// Scrapers decide what a GET /metrics may read. A request without an
// Authorization header gets the process-wide series only, which name no
// tenant and no queue; one with an operator token (TETHER_OPERATOR_TOKENS)
// or a metrics token (TETHER_METRICS_TOKENS) gets every series; one with
// any other credential is refused, so that a scrape configured with a
// wrong token fails loudly instead of quietly losing the per-tenant
// series. A tenant's own credential is "any other": the per-queue series
// hold every tenant's names and counts.
type Scrapers struct {
	// sums are the SHA-256 of the tokens, so comparing never leaks a
	// token's length.
	sums [][sha256.Size]byte
}

// NewScrapers accepts every non-empty token of the lists.
func NewScrapers(lists ...[]string) Scrapers {
	var s Scrapers
	for _, l := range lists {
		for _, t := range l {
			if t != "" {
				s.sums = append(s.sums, sha256.Sum256([]byte(t)))
			}
		}
	}
	return s
}

// Full says whether r may read every series: false without credentials, a
// *fault.Unauthorized for credentials that are not a scrape token.
func (s Scrapers) Full(r *http.Request) (bool, error) {
	auth := r.Header.Get(echo.HeaderAuthorization)
	if auth == "" {
		return false, nil
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if ok && tok != "" {
		sum := sha256.Sum256([]byte(tok))
		found := 0
		for _, want := range s.sums {
			found |= subtle.ConstantTimeCompare(sum[:], want[:])
		}
		if found == 1 {
			return true, nil
		}
	}
	return false, &fault.Unauthorized{Reason: "not a metrics token: send no Authorization for the process-wide series, " +
		"or Bearer <a TETHER_METRICS_TOKENS or TETHER_OPERATOR_TOKENS entry> for every series"}
}
