package nodes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tether-run/tether/internal/blob"
	"github.com/tether-run/tether/internal/fault"
	"github.com/tether-run/tether/internal/graphstore"
)

// validBlobs checks the blobs a node names: sha256s in either case (kept in
// lower case), each once (a repeat is dropped), at most graphstore.MaxNodeBlobs.
// Whether the tenant has them is checked in the write (checkBlobsExist),
// where blobs[i] counts in the list without repeats.
func validBlobs(shas []string, prefix string) ([]string, error) {
	if len(shas) > graphstore.MaxNodeBlobs {
		return nil, fault.Invalidf(prefix+"blobs", "must name at most %d blobs", graphstore.MaxNodeBlobs)
	}
	var out []string
	for i, sha := range shas {
		sha = strings.ToLower(sha)
		if !blob.ValidSHA256(sha) {
			return nil, fault.Invalidf(fmt.Sprintf("%sblobs[%d]", prefix, i), "must be a sha256: 64 hex characters")
		}
		if !slices.Contains(out, sha) {
			out = append(out, sha)
		}
	}
	return out, nil
}

// checkBlobsExist fails, naming the field, when the tenant has no blob of
// one of shas.
func checkBlobsExist(tx *graphstore.Tx, tenant string, shas []string, prefix string) error {
	for i, sha := range shas {
		if !tx.BlobExists(tenant, sha) {
			return fault.Invalidf(fmt.Sprintf("%sblobs[%d]", prefix, i), "no blob %s in this tenant: upload it first (POST /v1/blobs)", sha)
		}
	}
	return nil
}
