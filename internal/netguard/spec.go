package netguard

import (
	"strconv"

	"github.com/arvenza/helix/pkg/component"
)

// SpecOptions describes the [URIOptions] for the specs of components that open a
// listener (http-server://, mcp-server://), so that each declares them once, the
// same way. Values are checked by [URIOptions.Limits] ("off" is not a duration), so
// they are declared as strings. The result is a fresh slice.
func SpecOptions(role component.Direction) []component.Option {
	return []component.Option{
		{Name: "readTimeout", Type: component.TypeString, Default: DefaultReadTimeout.String(), Role: role, Since: "0.1",
			Description: "time to receive a request's headers and body (a duration, or off); a stalled body is answered 408. Listener option: workflows sharing a host:port give the same value or none"},
		{Name: "idleTimeout", Type: component.TypeString, Default: DefaultIdleTimeout.String(), Role: role, Since: "0.1",
			Description: "keep-alive connections without a request are closed after this (a duration, or off). Listener option"},
		{Name: "writeTimeout", Type: component.TypeString, Default: DefaultWriteTimeout.String(), Role: role, Since: "0.1",
			Description: "time to send a response once it starts, per event for event streams (a duration, or off); a slow workflow is not cut off. Listener option"},
		{Name: "maxConnections", Type: component.TypeString, Default: strconv.Itoa(DefaultMaxConnections), Role: role, Since: "0.1",
			Description: "open connections on the listener (a whole number, or off); more are closed at once. Listener option"},
		{Name: "maxConnectionsPerIp", Type: component.TypeString, Default: strconv.Itoa(DefaultMaxConnectionsPerIP), Role: role, Since: "0.1",
			Description: "open connections per client address, IPv6 per /64 (a whole number, or off). Listener option"},
	}
}
