// Command tether is the Tether server (tether serve, package internal/serve),
// its command line (package internal/cli) and its worker runner (tether work,
// package runner).
package main

import (
	"os"

	"github.com/tether-run/tether/internal/cli"
	"github.com/tether-run/tether/internal/serve"
)

func main() {
	os.Exit(cli.Main(serve.Command()))
}
