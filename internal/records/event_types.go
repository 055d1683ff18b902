package records

// The event types.
const (
	EventCreated     EventType = "created"
	EventUpdated     EventType = "updated"
	EventDeleted     EventType = "deleted"
	EventClaimed     EventType = "claimed"
	EventExtended    EventType = "extended"
	EventReleased    EventType = "released"
	EventCompleted   EventType = "completed"
	EventFailed      EventType = "failed"
	EventRequeued    EventType = "requeued"
	EventExpired     EventType = "expired"
	EventDead        EventType = "dead"
	EventCancelled   EventType = "cancelled"
	EventCommented   EventType = "commented"
	EventProgress    EventType = "progress"
	EventEdgeAdded   EventType = "edge_added"
	EventEdgeRetired EventType = "edge_retired"
	// EventNodeExpired is a node that ended expired: not claimed by its
	// start_by. EventExpired is a lease's.
	EventNodeExpired EventType = "node_expired"
)
