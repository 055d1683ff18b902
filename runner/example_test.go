package runner_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tether-run/tether/runner"
)

// A Go program that is a worker: every node of queue "code" runs the
// function, its result completes the node, an error fails it. The README's
// snippet is this function (readme_sync_test.go).
func ExampleRun() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := runner.Run(ctx, runner.Config{
		Server: os.Getenv("TETHER_URL"), Token: os.Getenv("TETHER_TOKEN"),
		Queue: "code", Slots: 4, TTL: 10 * time.Minute, Grace: 30 * time.Second,
		Handler: runner.HandlerFunc(func(ctx context.Context, job *runner.Job) (any, error) {
			// ctx ends if the lease is lost, timeout_ms passes or the grace is over.
			return map[string]any{"greeted": job.Node.ID}, nil
		}),
	})
	if err != nil { // the server refused the runner for good (a bad token, a bad queue)
		log.Fatal(err)
	}
}
