package runnertest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tether-run/tether/client"
	"github.com/tether-run/tether/runner"
	"github.com/tether-run/tether/runner/runnertest"
)

// greet is a handler under test: it greets the node's props.name.
var greet = runner.HandlerFunc(func(ctx context.Context, job *runner.Job) (any, error) {
	name, _ := job.Node.Props["name"].(string)
	if name == "" {
		return nil, errors.New("no name")
	}
	return map[string]string{"greeting": "hello " + name}, nil
})

// A unit test of a handler calls it with a job NewJob builds: no server.
func ExampleNewJob() {
	job := runnertest.NewJob(client.Node{ID: "n1", Type: "task", Props: map[string]any{"name": "ada"}})
	result, err := greet.Work(context.Background(), job)
	fmt.Println(result, err, job.Lease.Fence)
	// Output: map[greeting:hello ada] <nil> 1
}
