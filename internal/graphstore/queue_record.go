package graphstore

import (
	"github.com/tether-run/tether/internal/records"

	"github.com/tether-run/tether/internal/indexes"
)

// QueueSettingsGet returns the settings of a queue (zero when never set).
// Settings are read on every claim, so committed ones are cached in memory;
// a transaction that changed them reads its own write.
func (tx *Tx) QueueSettingsGet(tenant, queue string) (records.QueueSettings, error) {
	// Wrote keeps nothing of the key it is given, so that one stays off the
	// heap on this path of every claim; a miss builds it again.
	mine := tx.kv.Wrote(records.QueueKey(tenant, queue))
	if !mine {
		if q, ok := tx.store.queueSettings.Load(indexes.TenantQueue{Tenant: tenant, Queue: queue}); ok {
			return q.(records.QueueSettings), nil
		}
	}
	var q records.QueueSettings
	_, err := tx.getRecord(records.QueueKey(tenant, queue), &q)
	// Only the writer fills the cache: it alone reads the latest committed
	// state (a view's snapshot may be older than a commit hook's value).
	if err == nil && tx.writable && !mine {
		tx.store.queueSettings.Store(indexes.TenantQueue{Tenant: tenant, Queue: queue}, q)
	}
	return q, err
}

// QueueSettingsPut stores the settings of a queue.
func (tx *Tx) QueueSettingsPut(tenant, queue string, q records.QueueSettings) error {
	tq := indexes.TenantQueue{Tenant: tenant, Queue: queue}
	tx.OnCommit(func() { tx.store.queueSettings.Store(tq, q) })
	if q == (records.QueueSettings{}) {
		return tx.kv.Delete(records.QueueKey(tenant, queue))
	}
	return tx.setRecord(records.QueueKey(tenant, queue), &q)
}

// QueueSettingsList calls fn with every queue of tenant that has settings.
func (tx *Tx) QueueSettingsList(tenant string, fn func(queue string, q records.QueueSettings) error) error {
	prefix := records.NewKey(records.TagQueue, tenant).Bytes()
	return tx.kv.Scan(prefix, nil, false, true, func(key, val []byte) (bool, error) {
		var q records.QueueSettings
		if err := decode(val, &q, key); err != nil {
			return false, err
		}
		return true, fn(string(key[len(prefix):]), q)
	})
}
