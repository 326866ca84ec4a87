package migrations

// CheckNames are the names of the schema's CHECK constraints that Up adds
// on TiDB when a database lacks them.
func CheckNames() []string {
	names := make([]string, 0, len(checks))
	for _, c := range checks {
		names = append(names, c.name)
	}
	return names
}
