package tenancy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
)

// Policy is a tenant's effective policy: the server defaults overlaid by the
// tenant's own settings.
type Policy struct {
	ClaimTTLDefaultMS    int64   `json:"claim_ttl_default_ms"`
	ClaimTTLMaxMS        int64   `json:"claim_ttl_max_ms"`
	MaxAttemptsDefault   int64   `json:"max_attempts_default"`
	MaxLeasesPerIdentity int64   `json:"max_leases_per_identity"` // 0: no cap
	RequestsPerSecond    float64 `json:"requests_per_second"`     // 0: no cap
	// RetentionMS is how long finished nodes (with their comments and
	// retired edges) are kept after they last changed, and events after
	// they happened; 0 keeps them forever.
	RetentionMS    int64 `json:"retention_ms"`
	BlobQuotaBytes int64 `json:"blob_quota_bytes"` // 0: no cap
	// RetryInitialMS and RetryMaxMS are the retry backoff of a node created
	// without one: the first retry waits about RetryInitialMS, each next one
	// twice as long, at most RetryMaxMS (with equal jitter: half to all of
	// it). RetryInitialMS 0: failed runs come back at once.
	RetryInitialMS int64 `json:"retry_initial_ms"`
	RetryMaxMS     int64 `json:"retry_max_ms"`
}

// RetryFactor is the growth of the default retry backoff per attempt.
const RetryFactor = 2

// Policy field names, as in JSON and in *fault.Invalid.
const (
	fieldClaimTTLDefault = "claim_ttl_default_ms"
	fieldClaimTTLMax     = "claim_ttl_max_ms"
	fieldMaxAttempts     = "max_attempts_default"
	fieldMaxLeases       = "max_leases_per_identity"
	fieldRPS             = "requests_per_second"
	fieldRetention       = "retention_ms"
	fieldBlobQuota       = "blob_quota_bytes"
	fieldRetryInitial    = "retry_initial_ms"
	fieldRetryMax        = "retry_max_ms"
)

// The range of retention_ms besides 0 (forever): a second to ten years.
const (
	MinRetentionMS = 1000
	MaxRetentionMS = 10 * 365 * 24 * 3600 * 1000
)

// minClaimTTLMS is the shortest lease TTL a policy may set.
const minClaimTTLMS = 1000

// Change is one field of a merge patch. The zero value leaves the field as it
// is; Set with a nil Value puts it back to the server default.
type Change[T int64 | float64] struct {
	Set   bool
	Value *T
}

// PolicyPatch is a JSON merge patch of a tenant's policy: a field absent is
// unchanged, an explicit null goes back to the server default.
type PolicyPatch struct {
	ClaimTTLDefaultMS    Change[int64]
	ClaimTTLMaxMS        Change[int64]
	MaxAttemptsDefault   Change[int64]
	MaxLeasesPerIdentity Change[int64]
	RequestsPerSecond    Change[float64]
	RetentionMS          Change[int64]
	BlobQuotaBytes       Change[int64]
	RetryInitialMS       Change[int64]
	RetryMaxMS           Change[int64]
}

// DecodePolicyPatch decodes a merge patch from a JSON object. Unknown or
// repeated fields, values of the wrong type and negative numbers are a
// *fault.Invalid naming the field; whether the resulting policy holds together
// is checked when the patch is applied.
func DecodePolicyPatch(raw []byte) (PolicyPatch, error) {
	var p PolicyPatch
	notObject := &fault.Invalid{Reason: "the policy patch must be a JSON object"}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return PolicyPatch{}, notObject
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return PolicyPatch{}, notObject
		}
		name, _ := tok.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return PolicyPatch{}, notObject
		}
		if seen[name] {
			return PolicyPatch{}, fault.Invalidf(truncate(name, 64), "appears more than once")
		}
		seen[name] = true
		switch name {
		case fieldClaimTTLDefault:
			p.ClaimTTLDefaultMS, err = decodeIntChange(name, val)
		case fieldClaimTTLMax:
			p.ClaimTTLMaxMS, err = decodeIntChange(name, val)
		case fieldMaxAttempts:
			p.MaxAttemptsDefault, err = decodeIntChange(name, val)
		case fieldMaxLeases:
			p.MaxLeasesPerIdentity, err = decodeIntChange(name, val)
		case fieldRPS:
			p.RequestsPerSecond, err = decodeFloatChange(name, val)
		case fieldRetention:
			p.RetentionMS, err = decodeIntChange(name, val)
		case fieldBlobQuota:
			p.BlobQuotaBytes, err = decodeIntChange(name, val)
		case fieldRetryInitial:
			p.RetryInitialMS, err = decodeIntChange(name, val)
		case fieldRetryMax:
			p.RetryMaxMS, err = decodeIntChange(name, val)
		default:
			err = fault.Invalidf(truncate(name, 64), "unknown field")
		}
		if err != nil {
			return PolicyPatch{}, err
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return PolicyPatch{}, notObject
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return PolicyPatch{}, notObject
	}
	return p, nil
}

func decodeIntChange(field string, val json.RawMessage) (Change[int64], error) {
	s := string(bytes.TrimSpace(val))
	if s == "null" {
		return Change[int64]{Set: true}, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if duration.IsField(field) {
		// A millisecond field has the one range the duration package gives it.
		if err == nil {
			err = duration.Check(field, v)
		}
		if err != nil {
			return Change[int64]{}, duration.Of(field).Invalid(field)
		}
		return Change[int64]{Set: true, Value: &v}, nil
	}
	switch {
	case errors.Is(err, strconv.ErrRange):
		return Change[int64]{}, fault.Invalidf(field, "is out of range")
	case err != nil:
		return Change[int64]{}, fault.Invalidf(field, "must be an integer or null")
	case v < 0:
		return Change[int64]{}, fault.Invalidf(field, "must not be negative")
	}
	return Change[int64]{Set: true, Value: &v}, nil
}

func decodeFloatChange(field string, val json.RawMessage) (Change[float64], error) {
	s := string(bytes.TrimSpace(val))
	if s == "null" {
		return Change[float64]{Set: true}, nil
	}
	// The decoder has checked the JSON; only a number starts like this.
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return Change[float64]{}, fault.Invalidf(field, "must be a number or null")
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return Change[float64]{}, fault.Invalidf(field, "is out of range")
	case v < 0:
		return Change[float64]{}, fault.Invalidf(field, "must not be negative")
	}
	v += 0 // -0 becomes 0
	return Change[float64]{Set: true, Value: &v}, nil
}

func applyChange[T int64 | float64](dst **T, c Change[T]) {
	switch {
	case !c.Set:
	case c.Value == nil:
		*dst = nil
	default:
		v := *c.Value
		*dst = &v
	}
}

// apply returns o changed by the patch; o is left as it was.
func (o policyOverrides) apply(p PolicyPatch) policyOverrides {
	applyChange(&o.ClaimTTLDefaultMS, p.ClaimTTLDefaultMS)
	applyChange(&o.ClaimTTLMaxMS, p.ClaimTTLMaxMS)
	applyChange(&o.MaxAttemptsDefault, p.MaxAttemptsDefault)
	applyChange(&o.MaxLeasesPerIdentity, p.MaxLeasesPerIdentity)
	applyChange(&o.RequestsPerSecond, p.RequestsPerSecond)
	applyChange(&o.RetentionMS, p.RetentionMS)
	applyChange(&o.BlobQuotaBytes, p.BlobQuotaBytes)
	applyChange(&o.RetryInitialMS, p.RetryInitialMS)
	applyChange(&o.RetryMaxMS, p.RetryMaxMS)
	return o
}

func overlay[T int64 | float64](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// over returns the effective policy: defaults d overlaid by o.
func (o policyOverrides) over(d Policy) Policy {
	overlay(&d.ClaimTTLDefaultMS, o.ClaimTTLDefaultMS)
	overlay(&d.ClaimTTLMaxMS, o.ClaimTTLMaxMS)
	overlay(&d.MaxAttemptsDefault, o.MaxAttemptsDefault)
	overlay(&d.MaxLeasesPerIdentity, o.MaxLeasesPerIdentity)
	overlay(&d.RequestsPerSecond, o.RequestsPerSecond)
	overlay(&d.RetentionMS, o.RetentionMS)
	overlay(&d.BlobQuotaBytes, o.BlobQuotaBytes)
	overlay(&d.RetryInitialMS, o.RetryInitialMS)
	overlay(&d.RetryMaxMS, o.RetryMaxMS)
	return d
}

// validate checks an effective policy against the rules the Policy schema of
// openapi.yaml states and the server's TTL ceiling. When default and max
// disagree, the field blamed is the one the patch changed (the default when
// it changed both or neither).
func (p Policy) validate(ceilingMS int64, patch PolicyPatch) error {
	switch {
	case p.ClaimTTLDefaultMS < minClaimTTLMS:
		return fault.Invalidf(fieldClaimTTLDefault, "must be at least %s", msText(minClaimTTLMS))
	case p.ClaimTTLMaxMS < minClaimTTLMS:
		return fault.Invalidf(fieldClaimTTLMax, "must be at least %s", msText(minClaimTTLMS))
	case p.ClaimTTLMaxMS > ceilingMS:
		return fault.Invalidf(fieldClaimTTLMax, "must not exceed the server ceiling of %s", msText(ceilingMS))
	case p.ClaimTTLDefaultMS > p.ClaimTTLMaxMS:
		if patch.ClaimTTLMaxMS.Set && !patch.ClaimTTLDefaultMS.Set {
			return fault.Invalidf(fieldClaimTTLMax, "must not be below %s: %s", fieldClaimTTLDefault, msText(p.ClaimTTLDefaultMS))
		}
		return fault.Invalidf(fieldClaimTTLDefault, "must not exceed %s: %s", fieldClaimTTLMax, msText(p.ClaimTTLMaxMS))
	case p.MaxAttemptsDefault < 1:
		return fault.Invalidf(fieldMaxAttempts, "must be at least 1")
	case p.MaxLeasesPerIdentity < 0:
		return fault.Invalidf(fieldMaxLeases, "must not be negative")
	case p.RequestsPerSecond < 0 || math.IsNaN(p.RequestsPerSecond) || math.IsInf(p.RequestsPerSecond, 0):
		return fault.Invalidf(fieldRPS, "must be a non-negative number")
	case p.RetentionMS != 0 && (p.RetentionMS < MinRetentionMS || p.RetentionMS > MaxRetentionMS):
		return fault.Invalidf(fieldRetention, "must be 0 (keep forever) or from %s to %s", msText(MinRetentionMS), msText(MaxRetentionMS))
	case p.BlobQuotaBytes < 0:
		return fault.Invalidf(fieldBlobQuota, "must not be negative")
	case p.RetryMaxMS < p.RetryInitialMS:
		if patch.RetryInitialMS.Set && !patch.RetryMaxMS.Set {
			return fault.Invalidf(fieldRetryInitial, "must not exceed %s: %s", fieldRetryMax, msText(p.RetryMaxMS))
		}
		return fault.Invalidf(fieldRetryMax, "must be at least %s: %s", fieldRetryInitial, msText(p.RetryInitialMS))
	}
	return nil
}

// msText says a number of milliseconds for people: "86400000 (24h)".
func msText(ms int64) string {
	d := (time.Duration(ms) * time.Millisecond).String()
	if strings.HasSuffix(d, "m0s") {
		d = strings.TrimSuffix(d, "0s")
	}
	if strings.HasSuffix(d, "h0m") {
		d = strings.TrimSuffix(d, "0m")
	}
	return strconv.FormatInt(ms, 10) + " (" + d + ")"
}
