package server

import (
	"github.com/tether-run/tether/graph"
	"github.com/tether-run/tether/message"
	"github.com/tether-run/tether/schedule"
	"github.com/tether-run/tether/tenant"
	"github.com/tether-run/tether/worker"
)

// jsonRecoders are the owners' recodings of the records store formats 3
// and 4 kept as JSON: graph.Open migrates such a data directory with them.
func jsonRecoders() graph.Recoders {
	return graph.Recoders{
		Tenant:      tenant.TenantFromJSON,
		APIKey:      tenant.APIKeyFromJSON,
		Worker:      worker.FromJSON,
		Message:     message.FromJSON,
		Schedule:    schedule.RecordFromJSON,
		ScheduleRun: schedule.RunFromJSON,
	}
}
