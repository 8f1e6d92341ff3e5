package workflow

import (
	"strconv"
	"strings"
)

// The layout is layered, top to bottom: the trigger, then each step under the
// previous one; a node with branches has them side by side below it, each a
// column, and the next step joins them again. What runs on failure is drawn
// below the flow. Sizes are in CSS pixels; the SVG keeps them, so that a phone
// scrolls the graph instead of shrinking it to unreadable.
const (
	boxW   = 220
	boxH   = 58
	gapY   = 34 // between a node and the next
	gapBr  = 26 // above a branch's first node, for its label
	gapX   = 24 // between branch columns
	margin = 16
)

// Box is a node's rectangle.
type Box struct {
	X, Y, W, H int
}

// Edge is one arrow, an SVG path with an optional label.
type Edge struct {
	D      string
	Label  string
	LX, LY int
}

// Drawing is a laid-out graph.
type Drawing struct {
	Width, Height int
	// Boxes is indexed by Node.N.
	Boxes []Box
	Edges []Edge
	// FailureY is where the "when a step fails" part starts; 0 without one.
	FailureY int
}

type point struct{ x, y int }

type layouter struct {
	g     *Graph
	d     *Drawing
	width map[*Node]int
	// branchExits are the ends of each placed node's branches.
	branchExits map[*Node][]point
}

// Layout places g's nodes.
func Layout(g *Graph) *Drawing {
	d := &Drawing{Boxes: make([]Box, len(g.Nodes))}
	l := &layouter{g: g, d: d, width: map[*Node]int{}, branchExits: map[*Node][]point{}}
	w := l.seqWidth(g.Steps)
	fw := l.seqRowWidth(g.Failure)
	total := max(w, fw, boxW)
	cx := margin + total/2
	trig := g.Nodes[0]
	l.place(trig, cx, margin)
	exits := []point{{cx, margin + boxH}}
	y, exits := l.seq(g.Steps, cx, margin+boxH+gapY, exits, "")
	bottom := y - gapY
	for _, e := range exits {
		bottom = max(bottom, e.y)
	}
	if len(g.Failure) > 0 {
		d.FailureY = bottom + gapY
		fy := d.FailureY + gapBr
		x := margin + (total-fw)/2
		for _, n := range g.Failure {
			nw := l.widthOf(n)
			end := l.item(n, x+nw/2, fy)
			bottom = max(bottom, end)
			x += nw + gapX
		}
	}
	d.Width = total + 2*margin
	d.Height = bottom + margin
	return d
}

// seqWidth is the width of a column of nodes.
func (l *layouter) seqWidth(seq []*Node) int {
	w := 0
	for _, n := range seq {
		w = max(w, l.widthOf(n))
	}
	if len(seq) == 0 {
		w = boxW / 2
	}
	return w
}

// seqRowWidth is the width of nodes side by side (the failure row).
func (l *layouter) seqRowWidth(row []*Node) int {
	w := 0
	for i, n := range row {
		if i > 0 {
			w += gapX
		}
		w += l.widthOf(n)
	}
	return w
}

func (l *layouter) widthOf(n *Node) int {
	if w, ok := l.width[n]; ok {
		return w
	}
	w := boxW
	if len(n.Branches) > 0 {
		sum := 0
		for i, b := range n.Branches {
			if i > 0 {
				sum += gapX
			}
			sum += l.seqWidth(b.Steps)
		}
		w = max(w, sum)
	}
	l.width[n] = w
	return w
}

func (l *layouter) place(n *Node, cx, y int) {
	l.d.Boxes[n.N] = Box{X: cx - boxW/2, Y: y, W: boxW, H: boxH}
}

// seq lays out a column centred on cx from y, joining entries (the points
// the previous nodes leave from) to its first node; label goes on those
// joining edges. It returns the y below the column and its exits.
func (l *layouter) seq(seq []*Node, cx, y int, entries []point, label string) (int, []point) {
	for _, n := range seq {
		for i, e := range entries {
			lb := ""
			if i == 0 {
				lb = label
			}
			l.edge(e, point{cx, y}, lb)
		}
		label = ""
		bottom := l.item(n, cx, y)
		entries = l.exits(n, cx, y)
		y = bottom + gapY
	}
	if len(seq) == 0 && label != "" && len(entries) > 0 {
		// An empty branch: its label goes on a short stub.
		end := point{cx, y}
		for _, e := range entries {
			l.edge(e, end, label)
			label = ""
		}
		return y + gapY, []point{end}
	}
	return y, entries
}

// item places n at (cx, y) with its branches; it returns the bottom.
func (l *layouter) item(n *Node, cx, y int) int {
	l.place(n, cx, y)
	if len(n.Branches) == 0 {
		return y + boxH
	}
	bottom := y + boxH
	x := cx - l.widthOf(n)/2
	if sum := l.branchesWidth(n); sum < l.widthOf(n) {
		x = cx - sum/2
	}
	by := y + boxH + gapY + gapBr
	var exits []point
	for _, b := range n.Branches {
		bw := l.seqWidth(b.Steps)
		bcx := x + bw/2
		end, ex := l.seq(b.Steps, bcx, by, []point{{cx, y + boxH}}, b.Label)
		exits = append(exits, ex...)
		bottom = max(bottom, end-gapY)
		for _, e := range ex {
			bottom = max(bottom, e.y)
		}
		x += bw + gapX
	}
	l.branchExits[n] = exits
	return bottom
}

func (l *layouter) branchesWidth(n *Node) int {
	sum := 0
	for i, b := range n.Branches {
		if i > 0 {
			sum += gapX
		}
		sum += l.seqWidth(b.Steps)
	}
	return sum
}

// exits are the points the next node joins from: the node's bottom, or the
// ends of its branches.
func (l *layouter) exits(n *Node, cx, y int) []point {
	if ex, ok := l.branchExits[n]; ok {
		return ex
	}
	return []point{{cx, y + boxH}}
}

// edge draws an orthogonal arrow from a down to b: straight when aligned,
// else down, across and down again just above b.
func (l *layouter) edge(a, b point, label string) {
	var s strings.Builder
	s.WriteString("M" + strconv.Itoa(a.x) + " " + strconv.Itoa(a.y))
	if a.x != b.x {
		mid := b.y - gapBr/2 - 4
		if label == "" {
			mid = b.y - gapY/2
		}
		if mid < a.y {
			mid = a.y
		}
		s.WriteString(" V" + strconv.Itoa(mid) + " H" + strconv.Itoa(b.x))
	}
	s.WriteString(" V" + strconv.Itoa(b.y))
	e := Edge{D: s.String(), Label: label}
	if label != "" {
		e.LX, e.LY = b.x-boxW/2+2, b.y-6
	}
	l.d.Edges = append(l.d.Edges, e)
}
