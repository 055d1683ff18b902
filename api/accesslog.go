package api

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
)

// AccessLog says which requests get a line in the access log. The zero value
// is "errors". Whatever it says, every answer carries its X-Request-Id, every
// request counts in /metrics, and an internal error is logged with its cause.
type AccessLog struct {
	// Off logs no request.
	Off bool
	// Every logs, beside the errors, one in Every of the requests answered
	// below 400: 0 none of them, 1 all of them.
	Every uint64
}

// The values of TETHER_ACCESS_LOG.
const (
	AccessLogOff    = "off"    // no access log
	AccessLogErrors = "errors" // answers of 400 and above
	AccessLogAll    = "all"    // every request
	AccessLogSample = "sample" // "sample:N": the errors and one in N of the rest
)

// ParseAccessLog reads an access log setting: "off", "errors", "all", or
// "sample:N" for the errors plus one in N of the other requests.
func ParseAccessLog(s string) (AccessLog, error) {
	switch v := strings.ToLower(strings.TrimSpace(s)); v {
	case AccessLogOff:
		return AccessLog{Off: true}, nil
	case AccessLogErrors:
		return AccessLog{}, nil
	case AccessLogAll:
		return AccessLog{Every: 1}, nil
	default:
		n, ok := strings.CutPrefix(v, AccessLogSample+":")
		if every, err := strconv.ParseUint(n, 10, 64); ok && err == nil && every >= 1 {
			return AccessLog{Every: every}, nil
		}
	}
	return AccessLog{}, fmt.Errorf("%q is not an access log setting: want off, errors, all or sample:N (N >= 1)", s)
}

// String is the setting as ParseAccessLog reads it.
func (a AccessLog) String() string {
	switch {
	case a.Off:
		return AccessLogOff
	case a.Every == 0:
		return AccessLogErrors
	case a.Every == 1:
		return AccessLogAll
	}
	return AccessLogSample + ":" + strconv.FormatUint(a.Every, 10)
}

// StatusClientGone is the status a request is logged and counted with when
// its client went away before the answer (nginx's 499): a long poll or a
// stream the client stopped is not a server error. The client got nothing.
const StatusClientGone = 499

// accessLevel says whether a request answered with status gets an access log
// line, and at which level: 5xx are errors, 4xx warnings, the rest info (a
// client that went away, StatusClientGone, counts with the rest).
func (s *Server) accessLevel(status int) (slog.Level, bool) {
	a := s.cfg.AccessLog
	switch {
	case a.Off:
		return 0, false
	case status >= 500:
		return slog.LevelError, true
	case status >= 400 && status != StatusClientGone:
		return slog.LevelWarn, true
	case a.Every == 0:
		return 0, false
	case a.Every > 1 && s.sampled.Add(1)%a.Every != 0:
		return 0, false
	}
	return slog.LevelInfo, true
}
