package netguard

// A connection's requests run on the goroutine net/http starts for it, and a
// new goroutine starts with a small stack. Helix's handlers run deep (this
// guard, the MCP transport, a tool, the engine, a Starlang step), so on a
// connection's first request the runtime grows the stack several times over,
// each time copying it and adjusting every frame on it, and the last copies
// happen deep in the handler, where there are many frames to adjust. With a new
// connection per call that is paid on every call.
//
// reserveStack asks for the stack up front instead: called at the top of a
// connection's first request, where the stack holds only net/http's and the
// guard's frames, its large frame makes the runtime grow the stack in one step
// (the runtime grows by as much as the frame needs, not only by doubling), a
// copy of a handful of frames. The handler then runs on a stack it does not
// outgrow, and the connection's later requests find it there too. It costs no
// memory a request would not have taken anyway: the garbage collector shrinks a
// stack that a goroutine no longer uses, as before.

// stackReserveFrame is the frame of reserveStack. The runtime gives a goroutine
// a stack of a power of two in size; with this frame on top of the frames below
// the guard, the new stack is the next power of two above it: 8 KiB, which
// holds a keep-alive tools/call of a tool that runs a pipeline and a Starlang
// step, with the console capturing it (the test of this file checks that a call
// that deep no longer moves the stack; the MCP server's tests check that the
// call fits). A stack that grows further stays at the larger size for the
// connection's life, twice the memory per connection: so the reserve is not
// larger than the handler needs. A frame of half the target size is well clear
// of both neighbouring sizes.
const stackReserveFrame = 4 << 10

// reserveStack grows the calling goroutine's stack to hold stackReserveFrame
// more bytes than it uses now. The frame must really be there, so it is a local
// array the function reads (the compiler cannot drop it), and the function is
// never inlined (its frame would merge into the caller's and stay for the whole
// request).
//
//go:noinline
func reserveStack(i int) byte {
	var frame [stackReserveFrame]byte
	return frame[i&(stackReserveFrame-1)]
}

// reserveHandlerStack is called by the guard once per HTTP/1 connection, before
// its first request's handler runs; a variable so that a test can count the
// calls.
var reserveHandlerStack = func() { _ = reserveStack(0) }
