// Package deploy holds what runs Tether outside a developer's shell, and the
// tests that run it:
//
//   - docker/: the container image. Dockerfile builds it from source for
//     users (a golang stage, then FROM scratch); Dockerfile.prebuilt wraps a
//     static binary built beforehand (make image), for machines that reach no
//     registry. TestContainer builds that one with podman, runs it with the
//     data directory on a volume, does work through it, and finds the work
//     again in a new container on the same volume; then runs two of it as one
//     cluster over etcd.
//   - helm/tether: the Helm chart, one replica on a PersistentVolumeClaim or
//     N replicas over an existing etcd. Its tests live in deploy/helm, a Go
//     module of its own, so that Helm and the Kubernetes API types stay out of
//     Tether's go.mod.
//   - systemd/: the unit and its environment file, checked with
//     systemd-analyze verify.
//   - prometheus/: alerting rules (alerts.yml) and their promtool unit
//     tests (alerts_test.yml), which TestAlertingRules runs; the chart
//     carries a copy as a PrometheusRule.
//
// docs/deploy.md is the guide; docs/configuration.md lists every setting.
//
// Invariants the tests hold:
//   - Both Dockerfiles end in the same runtime stage: a non-root user
//     (65532), the data directory a volume at /data, a /tmp of its own (a
//     server on etcd keeps each shard's blobs there without TETHER_BLOB_DIR),
//     port 36725 exposed, and a HEALTHCHECK that runs the binary itself
//     (tether health), since the image has no shell.
//   - Data written through one container survives it.
package deploy
