package transport

import (
	"net"
	"testing"
)

// isLoopbackAddr must answer exactly as isLoopbackHost on the address's string.
func TestIsLoopbackAddrMatchesString(t *testing.T) {
	t.Parallel()
	var nilTCP *net.TCPAddr
	addrs := []net.Addr{
		nilTCP,
		&net.TCPAddr{},
		&net.TCPAddr{Port: 80},
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80},
		&net.TCPAddr{IP: net.IP{127, 0, 0, 1}, Port: 80},
		&net.TCPAddr{IP: net.IP{127, 1, 2, 3}, Port: 1},
		&net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 80},
		&net.TCPAddr{IP: net.IPv6loopback, Port: 80, Zone: "lo"},
		&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80, Zone: "lo"},
		&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 80, Zone: "eth0"},
		&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 443},
		&net.TCPAddr{IP: net.IPv6unspecified, Port: 443},
		&net.TCPAddr{IP: net.IP{127, 0, 0}, Port: 80},
		&net.TCPAddr{IP: net.IP{127, 0, 0, 1, 0}, Port: 80},
		&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80},
		&net.UnixAddr{Name: "/tmp/x", Net: "unix"},
	}
	for _, a := range addrs {
		if got, want := isLoopbackAddr(a), isLoopbackHost(a.String()); got != want {
			t.Errorf("isLoopbackAddr(%#v) = %v, isLoopbackHost(%q) = %v", a, got, a.String(), want)
		}
	}
}
