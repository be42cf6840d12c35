//go:build !js

package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// table is one scenario's results: a row per client kind (or per variant).
type table struct {
	title string
	aim   string
	cols  []string
	rows  [][]string
	notes []string
}

// verdict is one aim of the issue checked against Lifeline's figure.
type verdict struct {
	scenario, aim, measured string
	met                     bool
	skipped                 bool   // the aim is for scale 1 and this run was smaller
	take                    string // for a miss: what it would take
}

// report collects every table and verdict and prints rows as they come.
type report struct {
	mu       sync.Mutex
	tables   []*table
	verdicts []verdict
	errors   []string
	warnings []string
	stalls   *stallWatch
	out      io.Writer
}

// mark is a point to roll the report back to.
type mark struct{ tables, verdicts, errors int }

func (r *report) mark() mark {
	r.mu.Lock()
	defer r.mu.Unlock()
	return mark{len(r.tables), len(r.verdicts), len(r.errors)}
}

// rollback forgets what was added since m.
func (r *report) rollback(m mark) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tables, r.verdicts, r.errors = r.tables[:m.tables], r.verdicts[:m.verdicts], r.errors[:m.errors]
}

func (r *report) warn(s string) {
	r.mu.Lock()
	r.warnings = append(r.warnings, s)
	r.mu.Unlock()
	fmt.Fprintf(r.out, "!! %s\n", s)
}

func newReport() *report { return &report{out: os.Stdout} }

func (r *report) table(title, aim string, cols ...string) *table {
	t := &table{title: title, aim: aim, cols: cols}
	r.mu.Lock()
	r.tables = append(r.tables, t)
	r.mu.Unlock()
	fmt.Fprintf(r.out, "\n== %s\n", title)
	if aim != "" {
		fmt.Fprintf(r.out, "   aim: %s\n", aim)
	}
	fmt.Fprintf(r.out, "| %s |\n", strings.Join(cols, " | "))
	return t
}

// row adds a row and prints it at once.
func (r *report) row(t *table, cells ...string) {
	r.mu.Lock()
	t.rows = append(t.rows, cells)
	r.mu.Unlock()
	fmt.Fprintf(r.out, "| %s |\n", strings.Join(cells, " | "))
}

func (r *report) note(t *table, format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	r.mu.Lock()
	t.notes = append(t.notes, s)
	r.mu.Unlock()
	fmt.Fprintf(r.out, "   note: %s\n", s)
}

// judge records whether Lifeline met an aim; take says what a miss would need.
func (r *report) judge(scenario, aim string, met bool, measured, take string) {
	r.add(verdict{scenario: scenario, aim: aim, measured: measured, met: met, take: take})
}

// judgeFull is judge for an aim that holds for the full scale only (durations or client
// counts matter): a smaller run records the figure without a verdict.
func (r *report) judgeFull(full bool, scenario, aim string, met bool, measured, take string) {
	r.add(verdict{scenario: scenario, aim: aim, measured: measured, met: met || !full, skipped: !full, take: take})
}

func (r *report) add(v verdict) {
	r.mu.Lock()
	r.verdicts = append(r.verdicts, v)
	r.mu.Unlock()
	aim, measured := v.aim, v.measured
	mark := "MET"
	switch {
	case v.skipped:
		mark = "NOT JUDGED (scale < 1)"
	case !v.met:
		mark = "MISSED"
	}
	fmt.Fprintf(r.out, "   aim %s: %s (%s)\n", mark, aim, measured)
}

func (r *report) fail(scenario string, err error) {
	r.mu.Lock()
	r.errors = append(r.errors, fmt.Sprintf("%s: %v", scenario, err))
	r.mu.Unlock()
	fmt.Fprintf(r.out, "!! %s failed: %v\n", scenario, err)
}

// markdown writes the tables.
func (t *table) markdown(w io.Writer) {
	fmt.Fprintf(w, "### %s\n\n", t.title)
	if t.aim != "" {
		fmt.Fprintf(w, "Aim: %s\n\n", t.aim)
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(t.cols, " | "), strings.Repeat(" --- |", len(t.cols)))
	for _, row := range t.rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(w)
	for _, n := range t.notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	if len(t.notes) > 0 {
		fmt.Fprintln(w)
	}
}
