package graph

// QueueSettings are the per-queue switches a dispatcher sets.
type QueueSettings struct {
	Paused     bool  `json:"paused"`
	MaxRunning int64 `json:"max_running"` // 0 = no cap
}

// QueueSettingsGet returns the settings of a queue (zero when never set).
func (tx *Tx) QueueSettingsGet(tenant, queue string) (QueueSettings, error) {
	var q QueueSettings
	_, err := tx.getJSON(queueRecordKey(tenant, queue), &q)
	return q, err
}

// QueueSettingsPut stores the settings of a queue.
func (tx *Tx) QueueSettingsPut(tenant, queue string, q QueueSettings) error {
	if q == (QueueSettings{}) {
		return tx.del(queueRecordKey(tenant, queue))
	}
	return tx.setJSON(queueRecordKey(tenant, queue), q)
}

// QueueSettingsList calls fn with every queue of tenant that has settings.
func (tx *Tx) QueueSettingsList(tenant string, fn func(queue string, q QueueSettings) error) error {
	prefix := newKey(tagQueue, tenant).bytes()
	return tx.scan(prefix, nil, false, true, func(key, val []byte) (bool, error) {
		var q QueueSettings
		if err := jsonUnmarshal(val, &q); err != nil {
			return false, err
		}
		return true, fn(string(key[len(prefix):]), q)
	})
}
