package client

// protocolModern is the first protocol version of the sessionless era (requests
// carry their version and the client's identity in _meta; server/discover replaces
// initialize).
const protocolModern = "2026-07-28"
