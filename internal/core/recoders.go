package core

import (
	"github.com/tether-run/tether/internal/fleet"
	"github.com/tether-run/tether/internal/graphstore"
	"github.com/tether-run/tether/internal/message"
	"github.com/tether-run/tether/internal/schedule"
	"github.com/tether-run/tether/internal/tenancy"
)

// jsonRecoders are the owners' recodings of the records store formats 3
// and 4 kept as JSON: graphstore.Open migrates such a data directory with them.
func jsonRecoders() graphstore.Recoders {
	return graphstore.Recoders{
		Tenant:      tenancy.TenantFromJSON,
		APIKey:      tenancy.APIKeyFromJSON,
		Worker:      fleet.FromJSON,
		Message:     message.FromJSON,
		Schedule:    schedule.RecordFromJSON,
		ScheduleRun: schedule.RunFromJSON,
	}
}
