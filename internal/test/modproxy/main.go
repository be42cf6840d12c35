// Command modproxy writes a module proxy directory (the layout a GOPROXY of file:// URL
// serves) holding every module of this repository as a git tree has it, at one
// pseudo-version: what proxy.golang.org would serve for a commit of that tree. With it, `go
// get` is tried against the checkout before anything is published, by a program outside the
// repository that sets GOPROXY=file://DIR (scripts/installable.sh).
//
//	go run ./internal/test/modproxy -out DIR [-tree TREE]
//
// It prints the version. Without -tree it takes the working tree as `git add -A` would commit
// it (tracked files as they are now, untracked ones that are not ignored), through an index of
// its own: the checkout's index, HEAD and branches are left alone. The zips are made as the go
// command makes them from a repository (git archive, then golang.org/x/mod/zip, which leaves
// out nested modules and vendored files), so a file git ignores is missing here as it would
// be for a user.
//
// A requirement of one module of the repository on another is set to the version (a release
// tags them together). A replace directive is refused: the go command ignores it in any
// module but the main one, so a module that needs one cannot be used by anyone else.
// Tests only.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func main() {
	out := flag.String("out", "", "the proxy `directory` to write (created)")
	tree := flag.String("tree", "", "the git `tree-ish` to serve; default: the working tree as git add -A would commit it")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: modproxy -out DIR [-tree TREE]")
		os.Exit(2)
	}
	version, err := run(*out, *tree)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	fmt.Println(version)
}

func run(out, tree string) (string, error) {
	root, err := git(nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	root = strings.TrimSpace(root)
	if tree == "" {
		if tree, err = snapshot(root); err != nil {
			return "", err
		}
	}
	id, err := git(nil, "-C", root, "rev-parse", tree+"^{tree}")
	if err != nil {
		return "", err
	}
	secs, err := git(nil, "-C", root, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return "", err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(secs), 10, 64)
	if err != nil {
		return "", fmt.Errorf("the time of HEAD %q: %w", secs, err)
	}
	at := time.Unix(n, 0).UTC()
	// The tree's hash, not a commit's: the version names exactly this content, so a module
	// cache that holds it from an earlier run holds the same files.
	version := module.PseudoVersion("v0", "", at, strings.TrimSpace(id)[:12])

	files, err := git(nil, "-C", root, "ls-tree", "-r", "--name-only", tree)
	if err != nil {
		return "", err
	}
	mods := map[string]string{} // module path → its directory in the tree ("" for the root)
	for f := range strings.Lines(files) {
		f = strings.TrimSpace(f)
		if path.Base(f) != "go.mod" || strings.Contains("/"+f, "/testdata/") {
			continue
		}
		data, err := git(nil, "-C", root, "show", tree+":"+f)
		if err != nil {
			return "", err
		}
		mp := modfile.ModulePath([]byte(data))
		if mp == "" {
			return "", fmt.Errorf("%s names no module", f)
		}
		mods[mp] = strings.TrimSuffix(path.Dir(f), ".")
	}
	for mp, dir := range mods {
		if err := write(out, root, tree, mp, dir, version, at, mods); err != nil {
			return "", fmt.Errorf("module %s: %w", mp, err)
		}
	}
	return version, nil
}

// snapshot writes the working tree, as git add -A would stage it, to a tree object through a
// temporary index, and returns the tree's hash.
func snapshot(root string) (string, error) {
	index, err := os.CreateTemp("", "modproxy-index-*")
	if err != nil {
		return "", err
	}
	index.Close()
	defer os.Remove(index.Name())
	env := []string{"GIT_INDEX_FILE=" + index.Name()}
	if _, err := git(env, "-C", root, "read-tree", "HEAD"); err != nil {
		return "", err
	}
	if _, err := git(env, "-C", root, "add", "-A"); err != nil {
		return "", err
	}
	tree, err := git(env, "-C", root, "write-tree")
	return strings.TrimSpace(tree), err
}

// write puts module mp (directory dir of the tree) at version into the proxy directory out.
func write(out, root, tree, mp, dir, version string, at time.Time, mods map[string]string) error {
	gomod := path.Join(dir, "go.mod")
	data, err := git(nil, "-C", root, "show", tree+":"+gomod)
	if err != nil {
		return err
	}
	f, err := modfile.Parse(gomod, []byte(data), nil)
	if err != nil {
		return err
	}
	if len(f.Replace) > 0 {
		var rs []string
		for _, r := range f.Replace {
			rs = append(rs, r.Old.Path+" => "+r.New.Path)
		}
		return fmt.Errorf("%s replaces %s: the go command ignores a replace in a module it downloads, so a user's build would not find what this module's needs", gomod, strings.Join(rs, ", "))
	}
	for _, r := range f.Require {
		if _, ours := mods[r.Mod.Path]; ours {
			if err := f.AddRequire(r.Mod.Path, version); err != nil {
				return err
			}
		}
	}
	f.Cleanup()
	modBytes, err := f.Format()
	if err != nil {
		return err
	}

	archive := []string{"-C", root, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", tree}
	if dir != "" {
		archive = append(archive, dir)
	}
	raw, err := git(nil, archive...)
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(strings.NewReader(raw), int64(len(raw)))
	if err != nil {
		return err
	}
	var files []modzip.File
	for _, zf := range zr.File {
		name, ok := strings.CutPrefix(zf.Name, dir)
		name = strings.TrimPrefix(name, "/")
		if !ok || name == "" || strings.HasSuffix(name, "/") {
			continue
		}
		if name == "go.mod" {
			files = append(files, dataFile{name: name, data: modBytes})
			continue
		}
		files = append(files, archived{name: name, f: zf})
	}
	var z bytes.Buffer
	m := module.Version{Path: mp, Version: version}
	if err := modzip.Create(&z, m, files); err != nil {
		return err
	}

	escaped, err := module.EscapePath(mp)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at})
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{
		version + ".info": info,
		version + ".mod":  modBytes,
		version + ".zip":  z.Bytes(),
		// No release is listed: `go get M@latest` then asks for @latest, which is this.
		"list": nil,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(out, filepath.FromSlash(escaped), "@latest"), info, 0o644)
}

// git runs git with args (env added to the environment) and returns its output.
func git(env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return string(b), nil
}

// archived is a file of the git archive.
type archived struct {
	name string
	f    *zip.File
}

func (a archived) Path() string                 { return a.name }
func (a archived) Lstat() (os.FileInfo, error)  { return a.f.FileInfo(), nil }
func (a archived) Open() (io.ReadCloser, error) { return a.f.Open() }

// dataFile is a file whose content is given: the go.mod as the version has it.
type dataFile struct {
	name string
	data []byte
}

func (d dataFile) Path() string                 { return d.name }
func (d dataFile) Lstat() (os.FileInfo, error)  { return dataInfo(d), nil }
func (d dataFile) Open() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(d.data)), nil }

type dataInfo dataFile

func (i dataInfo) Name() string       { return path.Base(i.name) }
func (i dataInfo) Size() int64        { return int64(len(i.data)) }
func (i dataInfo) Mode() os.FileMode  { return 0o644 }
func (i dataInfo) ModTime() time.Time { return time.Time{} }
func (i dataInfo) IsDir() bool        { return false }
func (i dataInfo) Sys() any           { return nil }
