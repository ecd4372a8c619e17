package holdfast

// The one client surface (protos/contract/surface.json): every type, target,
// client, hold and admin member it names exists in Go's spelling, and every
// deprecated alias in protos/contract/surface/go.json still exists, points
// at its replacement and is documented Deprecated (and every name the
// package documents Deprecated is listed there). Members are found by
// reflection; Go cannot look up a package-level name at run time, so those
// go through pkgTypes, where a name the json asks for and the table lacks
// fails as missing.

import (
	"encoding/json"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// pkgTypes are the package-level names of the surface (every one a type in
// Go), the deprecated ones included.
var pkgTypes = map[string]reflect.Type{
	"Client":         reflect.TypeFor[Client](),
	"Hold":           reflect.TypeFor[Hold](),
	"Target":         reflect.TypeFor[Target](),
	"Seats":          reflect.TypeFor[Seats](),
	"Units":          reflect.TypeFor[Units](),
	"Segment":        reflect.TypeFor[Segment](),
	"ConfirmResult":  reflect.TypeFor[ConfirmResult](),
	"CancelResult":   reflect.TypeFor[CancelResult](),
	"StatusResult":   reflect.TypeFor[StatusResult](),
	"ResourceStatus": reflect.TypeFor[ResourceStatus](),
	"PoolStatus":     reflect.TypeFor[PoolStatus](),
	"Claim":          reflect.TypeFor[Claim](),
	"Health":         reflect.TypeFor[Health](),
	"Capacities":     reflect.TypeFor[Capacities](),
	"PoolCapacity":   reflect.TypeFor[PoolCapacity](),
	"Admin":          reflect.TypeFor[Admin](),

	"PoolHold":         reflect.TypeFor[PoolHold](),
	"Confirmation":     reflect.TypeFor[Confirmation](),
	"PoolConfirmation": reflect.TypeFor[PoolConfirmation](),
	"Capacity":         reflect.TypeFor[Capacity](),
}

// The surface sections whose names are members of a type, and whether
// struct fields count (a hold's Namespace, Fence, Target are fields).
var memberSections = []struct {
	section, owner string
	fields         bool
}{
	{"client", "Client", false},
	{"hold", "Hold", true},
	{"admin", "Admin", false},
}

type surfaceFile struct {
	Naming   map[string]map[string]string `json:"naming"`
	Sections map[string]map[string]any    `json:"-"`
}

type languageFile struct {
	Spelling   map[string][]string `json:"spelling"`
	Deprecated map[string]string   `json:"deprecated"`
}

func readSurface(t *testing.T) (surfaceFile, languageFile) {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "protos", "contract")
	var s surfaceFile
	var raw map[string]json.RawMessage
	var lang languageFile
	for path, v := range map[string]any{
		filepath.Join(dir, "surface.json"):       &raw,
		filepath.Join(dir, "surface", "go.json"): &lang,
	} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	if err := json.Unmarshal(raw["naming"], &s.Naming); err != nil {
		t.Fatalf("surface.json naming: %v", err)
	}
	s.Sections = map[string]map[string]any{}
	for _, name := range []string{"types", "targets", "client", "hold", "admin"} {
		var sec map[string]any
		if err := json.Unmarshal(raw[name], &sec); err != nil || len(sec) == 0 {
			t.Fatalf("surface.json: section %q missing or empty (%v)", name, err)
		}
		s.Sections[name] = sec
	}
	return s, lang
}

// spell applies a naming rule of surface.json to a canonical snake_case name.
func spell(rule, name string) string {
	if rule == "snake" {
		return name
	}
	words := strings.Split(name, "_")
	for i, w := range words {
		if w != "" && (rule == "Pascal" || i > 0) {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, "")
}

// goNames are the Go spellings of section.key: go.json's own, else the rule.
func goNames(s surfaceFile, lang languageFile, section, key string) []string {
	if names, ok := lang.Spelling[section+"."+key]; ok {
		return names
	}
	kind := map[string]string{"types": "type", "targets": "target"}[section]
	if kind == "" {
		kind = "member"
	}
	return []string{spell(s.Naming["go"][kind], key)}
}

// hasMember reports whether owner has an exported method name (on *owner)
// or, with fields, an exported struct field name.
func hasMember(owner reflect.Type, name string, fields bool) bool {
	if _, ok := reflect.PointerTo(owner).MethodByName(name); ok {
		return true
	}
	if fields && owner.Kind() == reflect.Struct {
		f, ok := owner.FieldByName(name)
		return ok && f.IsExported()
	}
	return false
}

// resolve finds a Go name as go.json spells it: "Type" or "Type.Member".
// It returns the type for a package-level name (nil for a member).
func resolve(name string) (reflect.Type, bool) {
	owner, member, isMember := strings.Cut(name, ".")
	typ, ok := pkgTypes[owner]
	if !ok {
		return nil, false
	}
	if !isMember {
		return typ, true
	}
	return nil, hasMember(typ, member, true)
}

// surfaceProblems lists every way the package differs from the surface;
// docs maps each exported name ("Type", "Type.Member", "Func") to its doc.
func surfaceProblems(s surfaceFile, lang languageFile, docs map[string]string) []string {
	var out []string
	target := reflect.TypeFor[Target]()
	for _, section := range []string{"types", "targets"} {
		for key := range s.Sections[section] {
			if strings.HasPrefix(key, "$") {
				continue
			}
			for _, name := range goNames(s, lang, section, key) {
				typ, ok := pkgTypes[name]
				switch {
				case !ok:
					out = append(out, section+"."+key+": no type "+name)
				case section == "targets" && !typ.Implements(target):
					out = append(out, section+"."+key+": "+name+" does not implement Target")
				}
			}
		}
	}
	for _, m := range memberSections {
		owner := pkgTypes[m.owner]
		for key := range s.Sections[m.section] {
			if strings.HasPrefix(key, "$") {
				continue
			}
			for _, name := range goNames(s, lang, m.section, key) {
				if !hasMember(owner, name, m.fields) {
					out = append(out, m.section+"."+key+": no "+m.owner+"."+name)
				}
			}
		}
	}
	for alias, repl := range lang.Deprecated {
		aliasType, ok := resolve(alias)
		if !ok {
			out = append(out, "deprecated "+alias+": missing")
			continue
		}
		replType, ok := resolve(repl)
		if !ok {
			out = append(out, "deprecated "+alias+": its replacement "+repl+" is missing")
			continue
		}
		if aliasType != nil && aliasType != replType {
			out = append(out, "deprecated "+alias+": not an alias of "+repl)
		}
		if d := deprecation(docs[alias]); !strings.Contains(d, repl) {
			out = append(out, "deprecated "+alias+": its doc has no \"Deprecated: use "+repl+"\" ("+d+")")
		}
	}
	for name, d := range docs {
		if _, listed := lang.Deprecated[name]; deprecation(d) != "" && !listed {
			out = append(out, name+" is documented Deprecated but not listed in surface/go.json")
		}
	}
	slices.Sort(out)
	return out
}

// deprecation is the "Deprecated: ..." paragraph of a doc comment, or "".
func deprecation(d string) string {
	for _, para := range strings.Split(d, "\n\n") {
		if strings.HasPrefix(para, "Deprecated: ") {
			return strings.Join(strings.Fields(para), " ")
		}
	}
	return ""
}

// packageDocs reads the doc comments of the package's exported names from
// its source (test files left out).
func packageDocs(t *testing.T) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/holdfast/holdfast/clients/go/holdfast")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, f := range pkg.Funcs {
		docs[f.Name] = f.Doc
	}
	for _, typ := range pkg.Types {
		docs[typ.Name] = typ.Doc
		for _, f := range typ.Funcs {
			docs[f.Name] = f.Doc
		}
		for _, m := range typ.Methods {
			docs[typ.Name+"."+m.Name] = m.Doc
		}
		for _, spec := range typ.Decl.Specs {
			st, ok := spec.(*ast.TypeSpec).Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, field := range st.Fields.List {
				for _, n := range field.Names {
					if n.IsExported() {
						docs[typ.Name+"."+n.Name] = field.Doc.Text()
					}
				}
			}
		}
	}
	return docs
}

func TestSurfaceMatchesContract(t *testing.T) {
	s, lang := readSurface(t)
	if got := s.Naming["go"]; got["type"] != "Pascal" || got["member"] != "Pascal" || got["target"] != "Pascal" {
		t.Fatalf("surface.json naming.go = %v; this test spells every name in Pascal case", got)
	}
	docs := packageDocs(t)
	for name := range pkgTypes {
		if _, ok := docs[name]; !ok {
			t.Errorf("pkgTypes lists %s, which the package does not declare", name)
		}
	}
	for _, p := range surfaceProblems(s, lang, docs) {
		t.Error(p)
	}
}

// The check fails for names the package lacks (and would not pass vacuously).
func TestSurfaceCheckCatchesMissingNames(t *testing.T) {
	s, lang := readSurface(t)
	s.Sections = map[string]map[string]any{
		"types":   {"no_such_result": ""},
		"targets": {"seats": "", "segment": ""},
		"client":  {"hold": "", "frobnicate": ""},
		"hold":    {"fence": "", "extend": "", "self_destruct": ""},
		"admin":   {"force_release": ""},
	}
	lang.Deprecated = map[string]string{"Client.Gone": "Client.Hold", "PoolHold": "Client", "Client.HoldUnits": "Client.Resume"}
	docs := packageDocs(t)
	docs["Client.Undocumented"] = "Undocumented is old.\n\nDeprecated: use Hold."
	want := []string{
		"Client.Undocumented is documented Deprecated but not listed in surface/go.json",
		"admin.force_release: no Admin.ForceRelease",
		"client.frobnicate: no Client.Frobnicate",
		"deprecated Client.Gone: missing",
		"deprecated Client.HoldUnits: its doc has no \"Deprecated: use Client.Resume\" (Deprecated: use Client.Hold with a Units target.)",
		"deprecated PoolHold: its doc has no \"Deprecated: use Client\" (Deprecated: use Hold, the one hold type for Seats and Units.)",
		"deprecated PoolHold: not an alias of Client",
		"hold.self_destruct: no Hold.SelfDestruct",
		"targets.segment: Segment does not implement Target",
		"types.no_such_result: no type NoSuchResult",
	}
	// The package's real deprecated names, not listed in this copy of go.json.
	var got []string
	for _, p := range surfaceProblems(s, lang, docs) {
		if !strings.HasSuffix(p, "is documented Deprecated but not listed in surface/go.json") || strings.HasPrefix(p, "Client.Undocumented") {
			got = append(got, p)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSpell(t *testing.T) {
	for _, tc := range []struct{ rule, in, want string }{
		{"Pascal", "confirm_result", "ConfirmResult"},
		{"Pascal", "set_capacity", "SetCapacity"},
		{"camel", "set_capacity", "setCapacity"},
		{"snake", "set_capacity", "set_capacity"},
	} {
		if got := spell(tc.rule, tc.in); got != tc.want {
			t.Errorf("spell(%s, %s) = %s, want %s", tc.rule, tc.in, got, tc.want)
		}
	}
}
