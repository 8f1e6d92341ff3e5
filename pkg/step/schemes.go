package step

// knownScheme reports whether scheme belongs to a component Helix documents but this
// context does not have, with a hint on what to do.
func knownScheme(scheme string) (hint string, known bool) {
	return "", false
}

// allSchemes lists the schemes a URI may use here, for did-you-mean hints.
func allSchemes(bc *BuildContext) []string { return bc.HC.Schemes() }

// directionProblem explains why scheme cannot be used in this role, "" when it can.
func directionProblem(scheme string, trigger bool) string { return "" }
