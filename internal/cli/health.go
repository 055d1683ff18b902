package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/tether-run/tether/internal/envflag"
)

// healthCommand probes a server's /health (or /ready) and says so in its exit
// code, so that an image without a shell or curl (FROM scratch) can name it
// as its HEALTHCHECK and a systemd unit or script can wait on it.
func healthCommand() *cobra.Command {
	var url string
	var ready bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Probe a server's /health (or /ready): exit 0 when it answers 200",
		Long: `Probe a Tether server: GET /health (the process is up) or, with --ready,
GET /ready (it can serve: the store is open and answers). Exit 0 on a 200
answer, 1 on any other answer or none within --timeout. No token is needed.

By default it probes this machine's server at TETHER_ADDR (127.0.0.1 when the
server listens on every address), so an image's HEALTHCHECK needs no
arguments: HEALTHCHECK CMD ["/tether", "health"].`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				url = localURL(envflag.String("TETHER_ADDR", "127.0.0.1:36725"))
			}
			path := "/health"
			if ready {
				path = "/ready"
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
			if err != nil {
				return usageErrorf("--url %q: %v", url, err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("%s%s: %w", url, path, err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s%s answered %s: %s", url, path, resp.Status, body)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s", body)
			return err
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "the server's base URL (default http:// and TETHER_ADDR, with 127.0.0.1 for an unspecified host)")
	cmd.Flags().BoolVar(&ready, "ready", false, "probe /ready instead of /health")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "how long to wait for the answer")
	return cmd
}

// localURL is the URL at which this machine reaches a server listening on
// addr: a listener on every address (0.0.0.0, ::, or no host) is reached on
// loopback.
func localURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
