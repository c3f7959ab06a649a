package deltaqprocessor

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/deltaq-otel/deltaq/internal/outcome"
)

// Outcome indices, in the order of outcomeValues.
const (
	outcomeSuccess = iota
	outcomeTimeout
	outcomeFailure
	numOutcomes
)

// attrServiceName is the resource attribute naming the service
// (OpenTelemetry semantic conventions, service.name).
const attrServiceName = "service.name"

// probe is a compiled ProbeConfig.
type probe struct {
	name   string
	dMaxNs int64
	bins   int64

	// re is the span name expression; nil when the probe matches an exact
	// name (the matcher's map holds it).
	re *regexp.Regexp
	// rePrefix is a literal every match of re contains (regexp.LiteralPrefix),
	// a cheap test that rejects most names before the expression runs.
	rePrefix string

	hasKind    bool
	kind       ptrace.SpanKind
	hasService bool
	service    string
	attrs      []attrEquals

	failure failureRule
}

// attrEquals requires a span attribute to equal a value.
type attrEquals struct {
	key string
	val literal
}

// compileProbe checks a probe's configuration and compiles it; def is the
// failure rule of probes that have none of their own. Each error names the
// field.
func compileProbe(pc *ProbeConfig, def failureRule) (probe, []error) {
	var errs []error
	p := probe{name: pc.Name, bins: int64(pc.Bins), failure: def}
	if pc.Name == "" {
		errs = append(errs, errors.New("name: must not be empty"))
	}
	d, derrs := pc.DMaxNanos()
	errs = append(errs, derrs...)
	p.dMaxNs = d

	m := &pc.Match
	if m.SpanName != "" && m.SpanNameRegexp != "" {
		errs = append(errs, errors.New("match.span_name, match.span_name_regexp: set at most one"))
	}
	if m.SpanNameRegexp != "" {
		re, err := compileRegexp(m.SpanNameRegexp)
		if err != nil {
			errs = append(errs, err)
		} else {
			p.re = re
			p.rePrefix, _ = re.LiteralPrefix()
		}
	}
	if m.SpanKind != "" {
		k, err := parseSpanKind(m.SpanKind)
		if err != nil {
			errs = append(errs, err)
		}
		p.hasKind, p.kind = true, ptrace.SpanKind(k)
	}
	if m.ServiceName != "" {
		p.hasService, p.service = true, m.ServiceName
	}
	keys := make([]string, 0, len(m.Attributes))
	for k := range m.Attributes {
		keys = append(keys, k)
	}
	slices.Sort(keys) // a fixed evaluation order
	for _, k := range keys {
		if k == "" {
			errs = append(errs, errors.New("match.attributes: a key must not be empty"))
			continue
		}
		if isContractAttr(k) {
			errs = append(errs, fmt.Errorf("match.attributes[%q] %w", k, errContractKey))
			continue
		}
		lit, err := literalOf(m.Attributes[k])
		if err != nil {
			errs = append(errs, fmt.Errorf("match.attributes[%q]: %w", k, err))
			continue
		}
		p.attrs = append(p.attrs, attrEquals{key: k, val: lit})
	}
	if pc.Failure != nil {
		f, ferrs := compileFailure("failure", pc.Failure)
		errs = append(errs, ferrs...)
		p.failure = f
	}
	return p, errs
}

// exactName returns the span name an exact-name probe matches.
func (pc *ProbeConfig) exactName() string {
	if pc.Match.SpanName != "" {
		return pc.Match.SpanName
	}
	return pc.Name
}

// matchesRest reports whether the span meets the probe's conditions other
// than the name.
func (p *probe) matchesRest(span ptrace.Span, res *resourceInfo) bool {
	if p.hasKind && span.Kind() != p.kind {
		return false
	}
	if p.hasService && res.serviceName() != p.service {
		return false
	}
	if len(p.attrs) > 0 {
		attrs := span.Attributes()
		for i := range p.attrs {
			v, ok := attrs.Get(p.attrs[i].key)
			if !ok || !p.attrs[i].val.equal(v) {
				return false
			}
		}
	}
	return true
}

// classify returns the outcome of a span of duration d ns (thesis, section
// 3.3): timeout when d > dMax, whatever the span's status (an observer waiting
// at most dMax never sees the later end); otherwise failure when the failure
// rule holds, and success when it does not.
func (p *probe) classify(span ptrace.Span, d int64) int {
	if d > p.dMaxNs {
		return outcomeTimeout
	}
	if p.failure.holds(span) {
		return outcomeFailure
	}
	return outcomeSuccess
}

// resourceInfo reads the service name of a resource once, when a probe first
// needs it.
type resourceInfo struct {
	res     pcommon.Resource
	loaded  bool
	service string
	// stored is the service name as in-flight instances keep it
	// (storedString), made once per resource and shared by its instances.
	stored       string
	storedLoaded bool
}

func (r *resourceInfo) serviceName() string {
	if !r.loaded {
		r.loaded = true
		if v, ok := r.res.Attributes().Get(attrServiceName); ok && v.Type() == pcommon.ValueTypeStr {
			r.service = v.Str()
		}
	}
	return r.service
}

// storedServiceName returns the service name cut to outcome.MaxNameLength
// bytes and copied, for an in-flight instance to keep.
func (r *resourceInfo) storedServiceName() string {
	if !r.storedLoaded {
		r.storedLoaded = true
		r.stored = storedString(r.serviceName())
	}
	return r.stored
}

// matcher finds the probe of a span. Exact names are looked up in a map, so
// a span that no probe names costs one map lookup. Span names that reach the
// regular-expression probes are remembered (up to maxCachedNames of them, of
// at most outcome.MaxNameLength bytes), with the list of expressions they
// match, so that each distinct name runs the expressions once.
type matcher struct {
	probes []probe
	// exact maps a span name to the exact-name probes with that name, in
	// configuration order.
	exact map[string][]int32
	// regexps lists the probes with a span name expression, in configuration
	// order.
	regexps []int32
	// byName maps probe names to indices.
	byName map[string]int32
	// names caches, for span names, the regexps probes whose expression
	// matches the name.
	names nameCache
}

// newMatcher compiles the configuration's probes.
func newMatcher(cfg *Config) (*matcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	def, _ := compileFailure("failure", &cfg.Failure)
	m := &matcher{
		probes: make([]probe, len(cfg.Probes)),
		exact:  make(map[string][]int32),
		byName: make(map[string]int32, len(cfg.Probes)),
	}
	for i := range cfg.Probes {
		pc := &cfg.Probes[i]
		m.probes[i], _ = compileProbe(pc, def)
		m.byName[pc.Name] = int32(i)
		if m.probes[i].re != nil {
			m.regexps = append(m.regexps, int32(i))
		} else {
			n := pc.exactName()
			m.exact[n] = append(m.exact[n], int32(i))
		}
	}
	m.names.init(maxCachedNames)
	return m, nil
}

// match returns the index of the first probe, in configuration order, whose
// conditions the span meets, or −1.
func (m *matcher) match(span ptrace.Span, res *resourceInfo) int {
	name := span.Name()
	best := -1
	if cands, ok := m.exact[name]; ok {
		for _, i := range cands {
			if m.probes[i].matchesRest(span, res) {
				best = int(i)
				break
			}
		}
	}
	if len(m.regexps) == 0 {
		return best
	}
	for _, i := range m.regexpMatches(name) {
		if best >= 0 && int(i) > best {
			break
		}
		if m.probes[i].matchesRest(span, res) {
			return int(i)
		}
	}
	return best
}

// regexpMatches returns the regexp probes whose expression matches name, in
// configuration order.
func (m *matcher) regexpMatches(name string) []int32 {
	if hit, ok := m.names.get(name); ok {
		return hit
	}
	var hit []int32
	for _, i := range m.regexps {
		p := &m.probes[i]
		if strings.Contains(name, p.rePrefix) && p.re.MatchString(name) {
			hit = append(hit, i)
		}
	}
	// A name longer than outcome.MaxNameLength runs the expressions every
	// time rather than being kept: the cache must hold whole names to be
	// exact, and its bound counts names, not bytes.
	if len(name) <= outcome.MaxNameLength {
		m.names.put(name, hit)
	}
	return hit
}

// maxCachedNames bounds the span names the matcher remembers; each is at most
// outcome.MaxNameLength bytes.
const maxCachedNames = 1000

// nameCache maps span names to the regexp probes they match. Readers load an
// immutable map without locking; a new name copies the map (under a mutex),
// which costs O(size) but happens at most maxCachedNames times. Once full,
// names not in it run the expressions every time.
type nameCache struct {
	m     atomic.Pointer[map[string][]int32]
	mu    sync.Mutex
	limit int
}

func (c *nameCache) init(limit int) {
	c.limit = limit
	empty := map[string][]int32{}
	c.m.Store(&empty)
}

func (c *nameCache) get(name string) ([]int32, bool) {
	v, ok := (*c.m.Load())[name]
	return v, ok
}

func (c *nameCache) put(name string, v []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	if len(old) >= c.limit {
		return
	}
	if _, ok := old[name]; ok {
		return
	}
	next := make(map[string][]int32, len(old)+1)
	for k, x := range old {
		next[k] = x
	}
	next[strings.Clone(name)] = v
	c.m.Store(&next)
}

// failureRule decides which spans that ended within dMax are failures.
type failureRule struct {
	statusError bool
	conds       []condition
}

// holds reports whether the span is a failure: status ERROR (when the rule
// counts it) or any condition holds.
func (f *failureRule) holds(span ptrace.Span) bool {
	if f.statusError && span.Status().Code() == ptrace.StatusCodeError {
		return true
	}
	if len(f.conds) == 0 {
		return false
	}
	attrs := span.Attributes()
	for i := range f.conds {
		if f.conds[i].holds(attrs) {
			return true
		}
	}
	return false
}

// errContractKey refuses a condition on an outcome attribute: the processor
// removes those from every span it receives before it matches the span, so
// such a condition could never hold.
var errContractKey = errors.New("is an attribute the deltaq processor writes (and removes from incoming spans), so no span can carry it here")

// compileFailure checks a failure rule and compiles it; field names in errors
// start with prefix.
func compileFailure(prefix string, fc *FailureConfig) (failureRule, []error) {
	var errs []error
	f := failureRule{statusError: fc.StatusError == nil || *fc.StatusError}
	for i, cc := range fc.Conditions {
		field := fmt.Sprintf("%s.conditions[%d]", prefix, i)
		c, err := compileCondition(&cc)
		if err == nil && isContractAttr(cc.Attribute) {
			err = fmt.Errorf("attribute: %q %w", cc.Attribute, errContractKey)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.%w", field, err))
			continue
		}
		f.conds = append(f.conds, c)
	}
	return f, errs
}

// op is a comparison operator of a failure condition.
type op uint8

const (
	opEq op = iota
	opNe
	opLt
	opLe
	opGt
	opGe
)

var ops = map[string]op{"": opEq, "==": opEq, "=": opEq, "!=": opNe, "<": opLt, "<=": opLe, ">": opGt, ">=": opGe}

// condition compares one span attribute with a literal.
type condition struct {
	key string
	op  op
	val literal
}

func compileCondition(cc *ConditionConfig) (condition, error) {
	if cc.Attribute == "" {
		return condition{}, errors.New("attribute: must not be empty")
	}
	o, ok := ops[cc.Op]
	if !ok {
		return condition{}, fmt.Errorf("op: unknown operator %q (want ==, !=, <, <=, > or >=)", cc.Op)
	}
	lit, err := literalOf(cc.Value)
	if err != nil {
		return condition{}, fmt.Errorf("value: %w", err)
	}
	if o >= opLt && lit.kind != litInt && lit.kind != litDouble {
		return condition{}, fmt.Errorf("value: operator %s needs a number, got %#v", cc.Op, cc.Value)
	}
	return condition{key: cc.Attribute, op: o, val: lit}, nil
}

// holds reports whether the condition holds for the attributes. It does not
// hold when the attribute is absent, or when an ordering operator meets a
// value that is not a number.
func (c *condition) holds(attrs pcommon.Map) bool {
	v, ok := attrs.Get(c.key)
	if !ok {
		return false
	}
	switch c.op {
	case opEq:
		return c.val.equal(v)
	case opNe:
		return !c.val.equal(v)
	}
	r, ok := c.val.compareNumber(v)
	if !ok {
		return false
	}
	switch c.op {
	case opLt:
		return r < 0
	case opLe:
		return r <= 0
	case opGt:
		return r > 0
	default: // opGe
		return r >= 0
	}
}

type litKind uint8

const (
	litString litKind = iota + 1
	litBool
	litInt
	litDouble
)

// literal is a configured attribute value.
type literal struct {
	kind litKind
	s    string
	b    bool
	i    int64
	f    float64
}

// equal reports whether v equals the literal. Strings and booleans equal
// values of their own type; numbers equal int and double values of the same
// numeric value.
func (l *literal) equal(v pcommon.Value) bool {
	switch l.kind {
	case litString:
		return v.Type() == pcommon.ValueTypeStr && v.Str() == l.s
	case litBool:
		return v.Type() == pcommon.ValueTypeBool && v.Bool() == l.b
	default:
		r, ok := l.compareNumber(v)
		return ok && r == 0
	}
}

// compareNumber returns the sign of v − l for a numeric v and literal; ok is
// false when either is not a number (or v is NaN). An int compared with an
// int is exact; otherwise both are compared as float64.
func (l *literal) compareNumber(v pcommon.Value) (sign int, ok bool) {
	if l.kind != litInt && l.kind != litDouble {
		return 0, false
	}
	switch v.Type() {
	case pcommon.ValueTypeInt:
		if l.kind == litInt {
			return cmp.Compare(v.Int(), l.i), true
		}
		return cmp.Compare(float64(v.Int()), l.f), true
	case pcommon.ValueTypeDouble:
		x := v.Double()
		if math.IsNaN(x) {
			return 0, false
		}
		if l.kind == litInt {
			return cmp.Compare(x, float64(l.i)), true
		}
		return cmp.Compare(x, l.f), true
	}
	return 0, false
}
