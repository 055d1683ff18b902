package graphstore

// QueueSettingsGet returns the settings of a queue (zero when never set).
// Settings are read on every claim, so committed ones are cached in memory;
// a transaction that changed them reads its own write.
func (tx *Tx) QueueSettingsGet(tenant, queue string) (QueueSettings, error) {
	// Wrote keeps nothing of the key it is given, so that one stays off the
	// heap on this path of every claim; a miss builds it again.
	mine := tx.kv.Wrote(queueRecordKey(tenant, queue))
	if !mine {
		if q, ok := tx.store.queueSettings.Load(tenantQueue{tenant, queue}); ok {
			return q.(QueueSettings), nil
		}
	}
	var q QueueSettings
	_, err := tx.getRecord(queueRecordKey(tenant, queue), &q)
	// Only the writer fills the cache: it alone reads the latest committed
	// state (a view's snapshot may be older than a commit hook's value).
	if err == nil && tx.writable && !mine {
		tx.store.queueSettings.Store(tenantQueue{tenant, queue}, q)
	}
	return q, err
}

// QueueSettingsPut stores the settings of a queue.
func (tx *Tx) QueueSettingsPut(tenant, queue string, q QueueSettings) error {
	tq := tenantQueue{tenant, queue}
	tx.OnCommit(func() { tx.store.queueSettings.Store(tq, q) })
	if q == (QueueSettings{}) {
		return tx.kv.Delete(queueRecordKey(tenant, queue))
	}
	return tx.setRecord(queueRecordKey(tenant, queue), &q)
}

// QueueSettingsList calls fn with every queue of tenant that has settings.
func (tx *Tx) QueueSettingsList(tenant string, fn func(queue string, q QueueSettings) error) error {
	prefix := newKey(tagQueue, tenant).bytes()
	return tx.kv.Scan(prefix, nil, false, true, func(key, val []byte) (bool, error) {
		var q QueueSettings
		if err := decode(val, &q, key); err != nil {
			return false, err
		}
		return true, fn(string(key[len(prefix):]), q)
	})
}
