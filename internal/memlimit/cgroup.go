package memlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// unlimited is the smallest value a cgroup v1 file holds for "no limit":
// the kernel writes the largest page-aligned int64 (9223372036854771712).
const unlimited = 1 << 62

// CgroupLimit is the memory limit of the cgroup this process runs in, read
// under root ("/" on a real system): the lowest of cgroup v2's memory.max
// and v1's memory.limit_in_bytes over the process's cgroup and its ancestors
// up to the mount point. bytes is 0 when no limit is set; file is the file
// that holds the limit found.
func CgroupLimit(root string) (bytes int64, file string, err error) {
	groups, err := readProcCgroup(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return 0, "", err
	}
	mounts, err := readCgroupMounts(filepath.Join(root, "proc", "self", "mountinfo"))
	if err != nil {
		return 0, "", err
	}
	for _, m := range mounts {
		path, ok := groups[m.hierarchy()]
		if !ok {
			continue
		}
		n, f, err := lowestUpward(filepath.Join(root, m.mountPoint), m.relative(path), m.limitFile())
		if err != nil {
			return 0, "", err
		}
		if n > 0 && (bytes == 0 || n < bytes) {
			bytes, file = n, strings.TrimPrefix(f, filepath.Clean(root))
			if !strings.HasPrefix(file, "/") {
				file = "/" + file
			}
		}
	}
	return bytes, file, nil
}

// cgroupMount is one cgroup filesystem in /proc/self/mountinfo.
type cgroupMount struct {
	v2         bool
	root       string // the part of the hierarchy mounted there
	mountPoint string
}

// hierarchy is the key of this mount's cgroup in /proc/self/cgroup's lines.
func (m cgroupMount) hierarchy() string {
	if m.v2 {
		return ""
	}
	return "memory"
}

func (m cgroupMount) limitFile() string {
	if m.v2 {
		return "memory.max"
	}
	return "memory.limit_in_bytes"
}

// relative is path (from /proc/self/cgroup) below the mount point; a path
// outside the mounted part (a cgroup namespace can do that) is the mount
// point itself.
func (m cgroupMount) relative(path string) string {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "."
	}
	return rel
}

// readProcCgroup maps each line of /proc/self/cgroup to its path: "" for
// cgroup v2's "0::/path", "memory" for the v1 hierarchy with the memory
// controller.
func readProcCgroup(name string) (map[string]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("error reading the process's cgroup: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			out[""] = parts[2]
		case hasItem(parts[1], "memory"):
			out["memory"] = parts[2]
		}
	}
	return out, sc.Err()
}

// readCgroupMounts lists the cgroup v2 mounts and the v1 mounts of the
// memory controller, from mountinfo's lines:
//
//	36 25 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
func readCgroupMounts(name string) ([]cgroupMount, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("error reading the mounts: %w", err)
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		m := cgroupMount{root: unescape(fields[3]), mountPoint: unescape(fields[4])}
		switch {
		case tail[0] == "cgroup2":
			m.v2 = true
		case tail[0] == "cgroup" && hasItem(tail[2], "memory"):
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// lowestUpward reads file in dir/rel and in each parent up to dir, and
// returns the lowest limit set (0: none) and the file that holds it.
func lowestUpward(dir, rel, file string) (int64, string, error) {
	var low int64
	var lowFile string
	for {
		name := filepath.Join(dir, rel, file)
		n, err := readLimit(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return 0, "", err
		case n > 0 && (low == 0 || n < low):
			low, lowFile = n, name
		}
		if rel == "." {
			return low, lowFile, nil
		}
		rel = filepath.Dir(rel)
	}
}

// readLimit reads a limit file: "max" (v2) and v1's huge values are 0.
func readLimit(name string) (int64, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("error reading %s: %q is not a byte count", name, s)
	}
	if n >= unlimited || n <= 0 {
		return 0, nil
	}
	return n, nil
}

func hasItem(list, item string) bool {
	for it := range strings.SplitSeq(list, ",") {
		if it == item {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
