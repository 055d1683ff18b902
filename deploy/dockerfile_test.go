package deploy

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// runtimeStage is what a Dockerfile says from its FROM scratch on, less
// comments and the COPY lines (whose sources differ by construction).
func runtimeStage(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []string
	in := false
	for line := range strings.SplitSeq(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "FROM scratch" {
			in = true
		}
		if !in || line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "COPY ") {
			continue
		}
		out = append(out, line)
	}
	require.NotEmpty(t, out, "%s has no FROM scratch stage", path)
	return out
}

// The image built from source and the one around a prebuilt binary run the
// same way, so testing the second tests the first's runtime.
func TestDockerfilesShareTheRuntimeStage(t *testing.T) {
	t.Parallel()
	src := runtimeStage(t, "docker/Dockerfile")
	pre := runtimeStage(t, "docker/Dockerfile.prebuilt")
	require.Equal(t, src, pre)
	joined := strings.Join(src, "\n")
	for _, want := range []string{"USER 65532:65532", `VOLUME ["/data"]`, "EXPOSE 36725", `CMD ["/tether", "health"]`} {
		require.Contains(t, joined, want)
	}
	// Both give the user its data directory and a /tmp (scratch has none).
	for _, path := range []string{"docker/Dockerfile", "docker/Dockerfile.prebuilt"} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Regexp(t, `(?m)^COPY .*--chown=65532:65532 \S+ /data$`, string(b), path)
		require.Regexp(t, `(?m)^COPY .*--chown=65532:65532 \S+ /tmp$`, string(b), path)
	}
}
