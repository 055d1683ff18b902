package intake

import (
	"testing"

	"github.com/tether-run/tether/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
