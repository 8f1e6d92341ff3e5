package file

import "github.com/arvenza/helix/pkg/component"

// HeaderFileName holds the name of the file read, written or picked up, relative to
// the base directory. The producer reads it when the fileName option is not set.
const HeaderFileName = "HelixFileName"

// Spec is the file:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    "file",
	Summary:   "read and write files below a directory; as a trigger, poll it for new files",
	Direction: component.Both,
	Syntax:    "file://directory[?options]",
	Description: `Every file name is relative to the base directory, and a name that leaves it
("../x", an absolute path elsewhere, a symlink pointing outside) is refused. A fileName
written with a placeholder (fileName=${body.name}) is data chosen by the caller: it must be
a relative name inside the directory, and a base of file:/// accepts no such name at all;
only allowEscape=true, written in the URI, lifts this.

As a target, writes create missing parent directories and, for fileExist=override, write a
hidden temporary file and rename it, so a consumer polling the directory never sees half a
file. As a trigger, the component takes the regular files directly in the directory (not
names starting with "."), oldest name first, one InOnly exchange per file with the content
as a string body; afterwards the file moves to .done/ (or is deleted with delete=true), or to
.error/ when the workflow failed. Programs dropping files should write them under a name
starting with "." and rename them when complete.

With helix.cluster.leader set, the trigger polls on the elected leader only (docs/scaling.md).`,
	Path: []component.PathPart{
		{Name: "directory", Description: "the base directory: file://./data is ./data, file:///srv/in is /srv/in, file:/// is the file-system root; empty means the working directory"},
	},
	Options: []component.Option{
		{Name: "operation", Type: component.TypeEnum, Default: "write", Enum: []string{"write", "read"}, Role: component.ProducerOnly, Since: "0.1",
			Description: "write stores the body in the file; read replaces the body with the file's content as a string"},
		{Name: "fileName", Type: component.TypeString, Role: component.ProducerOnly, Since: "0.1",
			Description: "the file to read or write, relative to the directory; without it the HelixFileName header names the file"},
		{Name: "fileExist", Type: component.TypeEnum, Default: "override", Enum: []string{"override", "append", "fail"}, Role: component.ProducerOnly, Since: "0.1",
			Description: "what a write does when the file exists"},
		{Name: "allowEscape", Type: component.TypeBool, Default: "false", Role: component.ProducerOnly, Since: "0.1",
			Description: "let names leave the directory (any file the process can open); must be written in the URI, not come from a placeholder"},
		{Name: "period", Type: component.TypeDuration, Default: "500ms", Role: component.ConsumerOnly, Since: "0.1",
			Description: "time between two polls of the directory"},
		{Name: "initialDelay", Type: component.TypeDuration, Default: "0s", Role: component.ConsumerOnly, Since: "0.1",
			Description: "wait before the first poll"},
		{Name: "delete", Type: component.TypeBool, Default: "false", Role: component.ConsumerOnly, Since: "0.1",
			Description: "delete processed files instead of moving them to .done/"},
	},
	Headers: []component.Header{
		{Name: HeaderFileName, Type: "string", Use: component.ReadsWrites, Role: component.ProducerOnly,
			Description: "read as the file name when fileName is not set; set to the name used"},
		{Name: HeaderFileName, Type: "string", Use: component.Writes, Role: component.ConsumerOnly,
			Description: "the name of the file picked up"},
	},
	Examples: []component.Example{
		{URI: "file://./out?fileName=report.json", Description: "write the body to ./out/report.json (maps and lists as JSON)"},
		{URI: "file://./data?operation=read&fileName=${body.name}", Description: "read a file the caller names, confined to ./data"},
		{URI: "file://./inbox?period=2s&delete=true", Description: "as a trigger: process each file dropped in ./inbox, then delete it"},
	},
	Since:          "0.1",
	Singleton:      true,
	FreshExchanges: true,
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
