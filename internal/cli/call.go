package cli

import (
	"io"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/client"
)

// apiClient is the generated client a command calls the server with.
type apiClient = client.ClientWithResponses

// answer is what a command reads of a generated response (a
// client.*Response): its status, its media type and its body.
type answer interface {
	StatusCode() int
	ContentType() string
	GetBody() []byte
}

// ask makes one call, do, with a client for the configured server and
// returns its answer, or the error the command ends with: no client (a bad
// -o or an empty TETHER_TOKEN), no answer, or the server's problem.
func ask[R answer](c *cli, do func(api *apiClient) (R, error)) (R, error) {
	api, err := c.api()
	if err != nil {
		var none R
		return none, err
	}
	return askWith(c, api, do)
}

// askWith is ask with a client of the command's own (one without a timeout,
// for a transfer).
func askWith[R answer](c *cli, api *apiClient, do func(api *apiClient) (R, error)) (R, error) {
	var none R
	res, err := do(api)
	if err != nil {
		return none, c.unreachable(err)
	}
	// The status and the media type are all check reads of the response.
	resp := &http.Response{StatusCode: res.StatusCode(), Header: http.Header{"Content-Type": {res.ContentType()}}}
	if err := c.check(resp, res.GetBody()); err != nil {
		return none, err
	}
	return res, nil
}

// call is ask, then the answer printed as emit prints it: table writes it
// for people.
func call[R answer](c *cli, cmd *cobra.Command, do func(api *apiClient) (R, error), table func(w io.Writer, res R)) error {
	res, err := ask(c, do)
	if err != nil {
		return err
	}
	return c.emit(cmd.OutOrStdout(), res.GetBody(), func(w io.Writer) { table(w, res) })
}
