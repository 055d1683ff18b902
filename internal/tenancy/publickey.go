package tenancy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// PublicKey is a PEM file holding a JWT verification key, named by the kid
// tokens carry in their header.
type PublicKey struct{ KID, Path string }

// minRSABits is the smallest RSA modulus we accept for verification.
const minRSABits = 2048

// ParsePublicKeys parses TETHER_JWT_PUBLIC_KEYS: a comma separated list of
// "kid=path" or "path", where the kid of a bare path is the file's base name
// without its extension. Blank entries are skipped; an empty kid or path, or a
// kid named twice, is an error.
func ParsePublicKeys(spec string) ([]PublicKey, error) {
	var keys []PublicKey
	seen := map[string]bool{}
	for entry := range strings.SplitSeq(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		var k PublicKey
		if kid, path, ok := strings.Cut(entry, "="); ok {
			k = PublicKey{KID: strings.TrimSpace(kid), Path: strings.TrimSpace(path)}
		} else {
			base := filepath.Base(entry)
			k = PublicKey{KID: strings.TrimSuffix(base, filepath.Ext(base)), Path: entry}
		}
		if k.KID == "" || k.Path == "" {
			return nil, fmt.Errorf("public key entry %q: want kid=path or path", entry)
		}
		if seen[k.KID] {
			return nil, fmt.Errorf("public key entry %q: kid %q named twice", entry, k.KID)
		}
		seen[k.KID] = true
		keys = append(keys, k)
	}
	return keys, nil
}

// loadPublicKey reads the first PEM block of path and returns the key with the
// one algorithm tokens signed by its private half may use.
func loadPublicKey(path string) (crypto.PublicKey, jwt.SigningMethod, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, nil, errors.New("no PEM block found")
	}
	var pub any
	switch block.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		return nil, nil, fmt.Errorf("PEM block %q is not a public key or certificate", block.Type)
	}
	if err != nil {
		return nil, nil, err
	}
	switch k := pub.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < minRSABits {
			return nil, nil, fmt.Errorf("RSA key of %d bits is below the minimum of %d", k.N.BitLen(), minRSABits)
		}
		return k, jwt.SigningMethodRS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return k, jwt.SigningMethodES256, nil
		case elliptic.P384():
			return k, jwt.SigningMethodES384, nil
		case elliptic.P521():
			return k, jwt.SigningMethodES512, nil
		}
		return nil, nil, fmt.Errorf("unsupported ECDSA curve %s", k.Curve.Params().Name)
	case ed25519.PublicKey:
		return k, jwt.SigningMethodEdDSA, nil
	}
	return nil, nil, fmt.Errorf("unsupported key type %T", pub)
}
