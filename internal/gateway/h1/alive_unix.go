//go:build unix

package h1

import (
	"errors"
	"syscall"
)

// alive reports whether a kept connection is still open and quiet, with one
// non-blocking peek (no wait in the poller, no goroutine): the Transport
// learns the same from a read it keeps running on every idle connection. An
// upstream that closed the connection (EOF, a reset) or sent something
// unasked on it loses it before a byte of the next request is written, so
// that request may go on another connection.
func (c *conn) alive() bool {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var one [1]byte
	open := false
	err = rc.Read(func(fd uintptr) bool {
		// 0 bytes: the upstream closed it; 1: it sent something unasked.
		_, _, rerr := syscall.Recvfrom(int(fd), one[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = rerr != nil && (errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK))
		return true // never wait for the connection to become readable
	})
	return err == nil && open
}
