package server

import (
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/graph"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/tenant"
)

// jsonRecoders are the owners' recodings of the records store formats 3
// and 4 kept as JSON: graph.Open migrates such a data directory with them.
func jsonRecoders() graph.Recoders {
	return graph.Recoders{
		Tenant:      tenant.TenantFromJSON,
		APIKey:      tenant.APIKeyFromJSON,
		Worker:      fleet.FromJSON,
		Message:     message.FromJSON,
		Schedule:    schedule.RecordFromJSON,
		ScheduleRun: schedule.RunFromJSON,
	}
}
