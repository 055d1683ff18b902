package graphstore

import (
	"github.com/tinylib/msgp/msgp"
)

// The tenancy package owns the shape of tenant and API key records; the graph
// stores them under the tenant's keys like everything else.

// TenantRecordGet decodes the tenant record into v; false when there is none.
func (tx *Tx) TenantRecordGet(tenant string, v msgp.Unmarshaler) (bool, error) {
	return tx.getRecord(tenantKey(tenant), v)
}

// TenantRecordPut stores the tenant record.
func (tx *Tx) TenantRecordPut(tenant string, v msgp.Marshaler) error {
	return tx.setRecord(tenantKey(tenant), v)
}

// APIKeyGet decodes API key id of tenant into v; false when there is none.
func (tx *Tx) APIKeyGet(tenant, id string, v msgp.Unmarshaler) (bool, error) {
	return tx.getRecord(apiKeyKey(tenant, id), v)
}

// APIKeyPut stores API key id of tenant.
func (tx *Tx) APIKeyPut(tenant, id string, v msgp.Marshaler) error {
	return tx.setRecord(apiKeyKey(tenant, id), v)
}

// APIKeyDelete erases API key id of tenant.
func (tx *Tx) APIKeyDelete(tenant, id string) error {
	return tx.kv.Delete(apiKeyKey(tenant, id))
}

// APIKeyList calls fn with each raw API key record of tenant in id order,
// starting after id `after` ("" from the start).
func (tx *Tx) APIKeyList(tenant, after string, fn func(id string, raw []byte) (bool, error)) error {
	prefix := newKey(tagAPIKey, tenant).bytes()
	var start []byte
	if after != "" {
		start = apiKeyKey(tenant, after)
	}
	return tx.kv.Scan(prefix, start, false, true, func(key, val []byte) (bool, error) {
		return fn(string(key[len(prefix):]), val)
	})
}
