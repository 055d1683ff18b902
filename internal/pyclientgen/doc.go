// Package pyclientgen writes the generated half of the Python client
// (clients/python/tether_client): the typed models (models.py) and the
// operation methods of the sync and async clients (_operations.py), from
// openapi.yaml. The hand-written runtime beside them (transport,
// problem exceptions, lease keeper) is what the generated methods call.
//
// No OpenAPI generator for Python runs on these machines (PyPI is out of
// reach), and the spec uses a small part of OpenAPI 3.0, so this is a small
// generator of the project's own. It reads the spec as YAML nodes, so the
// models and methods come out in the spec's order and a change to the spec
// shows as a small diff.
//
// Invariants:
//   - Output depends only on the spec: the same spec gives the same bytes
//     (`make verify` and TestGeneratedPythonIsFresh rely on it).
//   - Every operation of the spec gets a method, in the sync and the async
//     client alike; a shape the generator does not know is an error, never a
//     method left out.
//   - Every schema under components/schemas gets a model of the same name.
//   - The methods read the spec as it is, with one liberty, acceptsBoth:
//     the operations whose Accept header must list JSON and event streams.
package pyclientgen
