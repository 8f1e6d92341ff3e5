//go:build !unix

package h1

// alive cannot peek without blocking here: a kept connection the upstream
// closed shows when the request is written (nothing written: sent again on
// another connection) or when the answer is read (an error, never sent again).
func (c *conn) alive() bool { return true }
