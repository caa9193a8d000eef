#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fault injection for clattn's OpenCL calls (test suite 'fault').

usage: run_faults.py LIBCL_FAULT FAULT_ENTRY CLATTN [--exhaustive] [--jobs N]
                     [--only NAME] [--verbose] [--list-cases]

For every scenario of fault_entry (one public entry point each, called twice
between clattn_open and clattn_close) and for `clattn run`, a first run
under libcl_fault.so lists the OpenCL calls the library makes (CL_FAULT_LOG).
Then one run per chosen (function, n[, code]) fails exactly that call
(CL_FAULT) and is judged:

  - the process ends normally: no signal, no hang;
  - the entry point whose call failed returns a negative CLATTN_E* code with
    a non-empty clattn_last_error_detail(), and hands back no event or
    context; for an OpenCL status that clattn classifies (out of memory,
    device lost), the code is that class whichever layer (clattn or CLBlast)
    the call was in;
  - every entry point call that returns 0 produced the right result (checked
    against the CPU reference), and the call after a failed one succeeds:
    one failed OpenCL call must not leave the context broken;
  - no OpenCL object is left alive at exit (CL_FAULT_LEAKS), and none is
    retained or released after it was freed;
  - nothing is printed: the library promises never to print, and
    fault_entry itself prints to stderr only when its own setup fails.
    CLBlast's own messages ("CLBlast: OpenCL error: ...") are reported as a
    note, not a failure: clattn cannot silence them;
  - for `clattn run`: exit status 1 with a message, and the existing output
    file is byte for byte unchanged, with nothing else left beside it.

Which failures may be absorbed (the entry point returns 0, with a right
result):
  - a query (clGet*Info, clGetDeviceIDs): clattn reads optional facts (names,
    extensions, vendor attributes, a platform's devices) with a fallback, and
    a wrong guess costs speed, never correctness, which the check verifies;
  - a release (clRelease*): there is nothing a caller can do about one, and
    clattn_close returns nothing; the object it failed to release is the one
    leak accepted;
  - a retain (clRetain*): a library may cope without the extra reference
    (clattn's kernel cache could simply not keep the kernel), as long as it
    then releases no more than it holds, which the MISUSE check verifies.
Every other call (creates, builds, kernel arguments, enqueues, waits) is one
the entry point depends on: its failure must make the entry point fail.

By default each function is failed at its first and last call in every phase
(first call, second call, close) and at the one in the middle; enqueues and
waits are also failed at their first call in each phase with the device-lost
codes -36 and -9999 (-5 is their default). --exhaustive fails every call
with every code, about 3 times the runs.

Known defects are listed in EXPECTED_FAILURES: they are reported, not
failed. A listed defect that no longer happens fails the run, so that the
list is emptied as the library is fixed.

Exit status: 0 pass, 1 a new defect (or a listed one fixed), 77 no OpenCL
device.
"""

import argparse
import collections
import concurrent.futures
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import time

# ------------------------------------------------------------------ policy

# Known defects, until fixed in src/:
#   (scenario, function, n, code, defect): what is wrong
# scenario, n and code may be None: any scenario, any call, the default code.
# Scenario "cli-run" is `clattn run`. Empty this as the defects are fixed:
# an entry whose cases ran without showing its defect fails the suite.
EXPECTED_FAILURES = {
    # None: the defects this suite found (an unchecked clRetainKernel in the
    # kernel cache, unchecked retains in clattn_open_cl, -9999 inside CLBlast
    # reported as CLATTN_ECL, an unchecked clRetainEvent) are fixed.
}

QUERIES = {
    'clGetPlatformInfo', 'clGetDeviceIDs', 'clGetDeviceInfo', 'clGetCommandQueueInfo',
    'clGetMemObjectInfo', 'clGetProgramInfo', 'clGetProgramBuildInfo',
    'clGetKernelWorkGroupInfo', 'clGetEventProfilingInfo',
}


def absorbable(fn):
    """Whether the entry point may succeed although `fn` failed."""
    return fn in QUERIES or fn.startswith('clRelease') or fn.startswith('clRetain')


# How clattn classifies OpenCL statuses (src/device/cl_error.c). A caller
# acts on these classes (retry smaller; make a new context), so the class
# must not depend on the layer the failed call was in. A faulted kernel shows
# in the waits: there -5, -36 and -14 mean a lost context; from an enqueue or
# a create call they are ordinary failures (too many resources for a launch).
# NVIDIA's -9999 is a lost context wherever it comes from.
STATUS_CLASSES = {-4: 'CLATTN_EOOM', -61: 'CLATTN_EOOM', -9999: 'CLATTN_EDEVLOST'}
WAIT_STATUS_CLASSES = {-5: 'CLATTN_EDEVLOST', -36: 'CLATTN_EDEVLOST', -14: 'CLATTN_EDEVLOST'}
WAITS = {'clFinish', 'clWaitForEvents'}


def status_class(fn, code, blocking_read):
    """The code clattn must return when `fn` failed with `code`."""
    if code in STATUS_CLASSES:
        return STATUS_CLASSES[code]
    if fn in WAITS or blocking_read:
        return WAIT_STATUS_CLASSES.get(code)
    return None

# Defects reported as notes, not failures: not the library's to fix.
NOTES = {'clblast-prints'}

# Calls through which a lost device shows; each is also failed with these.
LOST_FUNCTIONS = {
    'clEnqueueReadBuffer', 'clEnqueueWriteBuffer', 'clEnqueueCopyBuffer',
    'clEnqueueFillBuffer', 'clEnqueueNDRangeKernel', 'clEnqueueMarkerWithWaitList',
    'clEnqueueBarrierWithWaitList', 'clFlush', 'clFinish', 'clWaitForEvents',
}
LOST_CODES = (-36, -9999)

SAMPLES = 3          # calls failed per function and phase: first, middle, last
LOST_SAMPLES = 1     # the first call of each phase
PHASES = ('call1', 'call2', 'close')  # fault_entry's phases that are failed
RUN_TIMEOUT = 60     # seconds; a run that takes longer hangs

# Only calls from these are counted and failed: the test program's own setup
# is not under test.
CALLERS = 'libclattn.so,libclblast.so'
CLI_CALLERS = CALLERS + ',clattn'

# ------------------------------------------------------------------- runs

Case = collections.namedtuple('Case', 'scenario fn n code phase')
Result = collections.namedtuple('Result', 'phase entry rc name output event detail')


def fault_spec(case):
    spec = '%s:%d' % (case.fn, case.n)
    return spec if case.code is None else '%s:%d' % (spec, case.code)


def describe(case):
    return '%s CL_FAULT=%s' % (case.scenario, fault_spec(case))


class Run:
    """One process under the interposer and what it left behind."""

    def __init__(self, argv, env, workdir, timeout=RUN_TIMEOUT):
        self.log_path = os.path.join(workdir, 'calls.log')
        self.leaks_path = os.path.join(workdir, 'leaks.txt')
        full_env = dict(env, CL_FAULT_LOG=self.log_path, CL_FAULT_LEAKS=self.leaks_path)
        # A cache folder of the run's own: with the library's kept program
        # binaries shared, the calls a run makes would depend on the runs
        # before it (a kept binary loaded, or a refused one rebuilt from
        # source; test_cache checks those). PoCL keeps its kernel cache.
        home = env.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
        full_env.setdefault('POCL_CACHE_DIR', os.path.join(home, 'pocl', 'kcache'))
        full_env['XDG_CACHE_HOME'] = workdir.rstrip('/') + '.cache'  # beside it: not a stray file
        self.hung = False
        try:
            p = subprocess.run(argv, env=full_env, cwd=workdir, capture_output=True,
                               timeout=timeout)
            self.status, self.stdout, self.stderr = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            self.hung = True
            self.status, self.stdout, self.stderr = None, e.stdout or b'', e.stderr or b''
        self.stdout = self.stdout.decode('utf-8', 'replace')
        self.stderr = self.stderr.decode('utf-8', 'replace')

    def calls(self):
        """[(phase, function, n, fault code or None)] in call order."""
        out, phase = [], 'start'
        try:
            lines = open(self.log_path, encoding='utf-8', errors='replace').read().splitlines()
        except OSError:
            return out
        for line in lines:
            if line.startswith('# '):
                phase = line[2:]
                continue
            f = line.split()
            if len(f) >= 3:
                code = int(f[4]) if len(f) >= 5 and f[3] == 'FAULT' else None
                out.append((phase, f[0], int(f[1]), code))
        return out

    def leaks(self):
        """(LIVE lines not excused, MISUSE lines, whether the report is complete)."""
        try:
            lines = open(self.leaks_path, encoding='utf-8', errors='replace').read().splitlines()
        except OSError:
            return [], [], False
        live = [l for l in lines if l.startswith('LIVE ') and not l.endswith(' release-failed')]
        misuse = [l for l in lines if l.startswith('MISUSE ')]
        return live, misuse, 'END' in lines

    def results(self):
        """fault_entry's RESULT lines by phase."""
        out = {}
        pat = re.compile(r'^RESULT (\S+) (\S+) rc=(-?\d+) name=(\S+) output=(\S+) '
                         r'event=(\S+) detail=(.*)$')
        for line in self.stdout.splitlines():
            m = pat.match(line)
            if m:
                r = Result(m[1], m[2], int(m[3]), m[4], m[5], m[6], m[7])
                out[r.phase] = r
        return out

    def ended_badly(self):
        """A defect description if the process did not end on its own, else None."""
        if self.hung:
            return 'hang', 'still running after %d s' % RUN_TIMEOUT
        if self.status < 0:
            return 'crash', 'killed by signal %d' % -self.status
        return None


def interposer_env(lib, callers):
    env = dict(os.environ, LD_PRELOAD=lib, CL_FAULT_CALLERS=callers)
    env.pop('CL_FAULT', None)
    # A sanitized build links its runtime into the interposer too, which
    # then is not first in the link order; that is fine here.
    env.setdefault('ASAN_OPTIONS', 'verify_asan_link_order=0')
    return env


def fault_env(env, case):
    """The environment of a run that fails `case`'s call.

    Without glibc's malloc perturbation, which `meson test` turns on: it
    fills every block PoCL's LLVM allocates, in each of some 500 processes,
    and makes the suite several times slower in system time alone. The
    clean runs, one per scenario, keep it."""
    env = dict(env, CL_FAULT=fault_spec(case))
    env.pop('MALLOC_PERTURB_', None)
    return env


# ---------------------------------------------------------------- judging

def judge_common(run, fired, faulted=True):
    """Defects any run can show: (defect, message) pairs. `fired` is the
    failed call from the log, None if it never happened."""
    bad = run.ended_badly()
    if bad:
        return [bad]
    out = []
    if faulted and fired is None:
        out.append(('not-fired', 'the failed call never happened (the call sequence differs '
                    'from the listing run)'))
    live, misuse, complete = run.leaks()
    if not complete:
        out.append(('no-leak-report', 'the interposer wrote no complete report at exit'))
    if live:
        out.append(('leak', '; '.join(live)))
    if misuse:
        out.append(('misuse', '; '.join(misuse)))
    return out


def judge_entry(case, fired, results):
    """Defects of fault_entry's entry point calls; `fired` is the failed
    call (phase, function, n, code) or None."""
    fired_phase = fired[0] if fired else None
    out = []
    for phase in ('call1', 'call2'):
        r = results.get(phase)
        if r is None:
            out.append(('no-result', 'no result printed for %s' % phase))
            continue
        where = '%s returned %d (%s)' % (r.entry, r.rc, r.name)
        if r.rc > 0 or r.name == 'CLATTN_UNKNOWN':
            out.append(('bad-code', where + ', not a CLATTN_E* code'))
        if r.rc == 0 and r.output != 'ok':
            out.append(('wrong-output', '%s in %s: success with a wrong result' % (r.entry, phase)))
        if phase == fired_phase:
            if r.rc == 0 and not absorbable(case.fn):
                out.append(('rc-zero', '%s succeeded although %s failed' % (r.entry, case.fn)))
            if r.rc < 0 and not r.detail:
                out.append(('no-detail', where + ' with an empty clattn_last_error_detail()'))
            # Blocking transfers are waits too; the library reads O with one.
            want = status_class(case.fn, fired[3], case.fn == 'clEnqueueReadBuffer')
            if r.rc < 0 and want and r.name != want:
                out.append(('wrong-code', '%s for status %d, which clattn classifies as %s: %s'
                            % (where, fired[3], want, r.detail)))
            if r.event == 'returned':
                out.append(('event-returned', r.entry + ' failed yet returned an event'))
            if r.rc < 0 and r.output == 'left':
                out.append(('context-left', r.entry + ' failed yet handed back a context'))
        elif r.rc != 0:
            after = fired_phase == 'call1' and phase == 'call2'
            lost = results.get(fired_phase) is not None and results[fired_phase].name == 'CLATTN_EDEVLOST'
            # A lost context stays lost: every later call says so.
            if after and lost and r.name == 'CLATTN_EDEVLOST' and r.detail:
                continue
            out.append(('no-recovery' if after else 'unfaulted-failure',
                        '%s in %s%s: %s' % (where, phase, ' (after the failed call)' if after
                                            else ' (no call failed in it)', r.detail)))
        elif phase == 'call2' and fired_phase == 'call1' and \
                results.get('call1') is not None and results['call1'].name == 'CLATTN_EDEVLOST':
            out.append(('lost-forgotten', '%s succeeded in call2 after call1 lost the context'
                        % r.entry))
    opened = results.get('open')
    if opened is None or opened.rc != 0:
        out.append(('unfaulted-failure', 'clattn_open failed before any fault'))
    return out


def judge_quiet(stderr):
    """fault_entry's stderr, which only the library could have written to."""
    lines = stderr.splitlines()
    ours = [l for l in lines if not l.startswith('CLBlast: ')]
    out = []
    if ours:
        out.append(('prints', 'printed on stderr: ' + ' | '.join(ours)[:300]))
    if len(ours) < len(lines):
        out.append(('clblast-prints', 'CLBlast printed on stderr: ' +
                    ' | '.join(l for l in lines if l not in ours)[:300]))
    return out


def judge_cli(case, fired, run, before, baseline, workdir, out_name):
    """Defects of one `clattn run`."""
    out = []
    with open(os.path.join(workdir, out_name), 'rb') as f:
        after = f.read()
    left = sorted(set(os.listdir(workdir)) - {out_name, 'calls.log', 'leaks.txt'})
    if run.status not in (0, 1):
        out.append(('bad-exit', 'exit status %d (want 1 for a runtime failure)' % run.status))
    if run.status == 0:
        if not absorbable(case.fn) and fired is not None:
            out.append(('exit-zero', 'clattn run succeeded although %s failed' % case.fn))
        if after != baseline:
            out.append(('wrong-output', 'success with an output other than the clean run\'s'))
    else:
        if not run.stderr.strip():
            out.append(('no-message', 'failed without a message on stderr'))
        if after != before:
            out.append(('output-touched', 'the existing output file changed'))
    if left:
        out.append(('stray-file', 'left beside the output: ' + ', '.join(left)))
    return out


# ---------------------------------------------------------------- planning

def spread(ns, k):
    """k members of ns: the first, the last and evenly spaced ones between
    (all of them when there are k or fewer; the first alone when k is 1)."""
    if len(ns) <= k:
        return list(ns)
    if k == 1:
        return ns[:1]
    picks = {round(i * (len(ns) - 1) / (k - 1)) for i in range(k)}
    return [ns[i] for i in sorted(picks)]


def plan(scenario, calls, phases, exhaustive):
    """The cases for one scenario from its listing run's calls."""
    by_key = collections.defaultdict(list)
    for phase, fn, n, _ in calls:
        if phases is None or phase in phases:
            by_key[(fn, phase)].append(n)
    cases = []
    for (fn, phase), ns in sorted(by_key.items()):
        for n in (ns if exhaustive else spread(ns, SAMPLES)):
            cases.append(Case(scenario, fn, n, None, phase))
        if fn in LOST_FUNCTIONS:
            for n in (ns if exhaustive else spread(ns, LOST_SAMPLES)):
                cases.extend(Case(scenario, fn, n, code, phase) for code in LOST_CODES)
    return cases


# --------------------------------------------------------------- scenarios

class EntryScenarios:
    """fault_entry's scenarios: the library's entry points."""

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.env = interposer_env(args.lib, CALLERS)

    def names(self):
        p = subprocess.run([self.args.entry, '--list'], capture_output=True, text=True,
                           check=True)
        return [line.split()[0] for line in p.stdout.splitlines()]

    def listing(self, name):
        """The clean run: (exit status or 77, calls, defects)."""
        run = Run([self.args.entry, name], self.env, tempfile.mkdtemp(dir=self.tmp))
        if run.status == 77:
            return 77, [], []
        defects = judge_common(run, None, faulted=False) + judge_entry(
            Case(name, '', 0, None, None), None, run.results())
        if run.status != 0 and not run.ended_badly():
            defects.append(('setup', 'exit status %s: %s' % (run.status, run.stderr.strip())))
        return run.status, run.calls(), defects

    def run_case(self, case):
        run = Run([self.args.entry, case.scenario], fault_env(self.env, case),
                  tempfile.mkdtemp(dir=self.tmp))
        fired = next((c for c in run.calls() if c[3] is not None), None)
        defects = judge_common(run, fired)
        if not run.ended_badly():
            if run.status != 0:
                defects.append(('setup', 'exit status %d: %s' % (run.status,
                                                                 run.stderr.strip()[-300:])))
            else:
                defects += judge_entry(case, fired, run.results())
                defects += judge_quiet(run.stderr)
        return run, defects


def write_npy(path, shape, values):
    """A float32 C-order .npy with the standard library only."""
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % (tuple(shape),)
    h += ' ' * (64 - (10 + len(h) + 1) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode('latin1'))
        f.write(struct.pack('<%df' % len(values), *values))


class CliScenario:
    """`clattn run --q .. --k .. --v .. --out EXISTING.npy`."""

    name = 'cli-run'
    OUT = 'O.npy'

    def __init__(self, args, tmp):
        self.args, self.tmp = args, tmp
        self.env = interposer_env(args.lib, CLI_CALLERS)
        self.inputs = os.path.join(tmp, 'inputs')
        os.mkdir(self.inputs)
        rng = random.Random(1)
        q_shape, kv_shape = (1, 2, 17, 8), (1, 1, 17, 8)
        for name, shape in (('q', q_shape), ('k', kv_shape), ('v', kv_shape)):
            n = shape[0] * shape[1] * shape[2] * shape[3]
            write_npy(os.path.join(self.inputs, name + '.npy'), shape,
                      [rng.uniform(-1, 1) for _ in range(n)])
        # A previous result, which a failed run must leave as it is.
        existing = os.path.join(tmp, 'existing.npy')
        write_npy(existing, q_shape, [7.0] * (2 * 17 * 8))
        with open(existing, 'rb') as f:
            self.before = f.read()
        self.baseline = None

    def argv(self):
        i = self.inputs
        return [self.args.clattn, 'run', '--q', os.path.join(i, 'q.npy'), '--k',
                os.path.join(i, 'k.npy'), '--v', os.path.join(i, 'v.npy'), '--out', self.OUT]

    def workdir(self):
        d = tempfile.mkdtemp(dir=self.tmp)
        with open(os.path.join(d, self.OUT), 'wb') as f:
            f.write(self.before)
        return d

    def listing(self):
        d = self.workdir()
        run = Run(self.argv(), self.env, d)
        defects = judge_common(run, None, faulted=False)
        if not run.ended_badly() and run.status != 0:
            defects.append(('setup', 'clean run: exit status %d: %s' % (run.status,
                                                                      run.stderr.strip())))
        with open(os.path.join(d, self.OUT), 'rb') as f:
            self.baseline = f.read()
        return run.status, run.calls(), defects

    def run_case(self, case):
        d = self.workdir()
        run = Run(self.argv(), fault_env(self.env, case), d)
        fired = next((c for c in run.calls() if c[3] is not None), None)
        defects = judge_common(run, fired)
        if not run.ended_badly():
            defects += judge_cli(case, fired, run, self.before, self.baseline, d, self.OUT)
        return run, defects


# ------------------------------------------------------------------- main

def matches(key, case):
    """Whether an EXPECTED_FAILURES key covers `case` (None: any)."""
    sc, fn, n, code, _ = key
    return (sc in (None, case.scenario) and fn == case.fn and n in (None, case.n)
            and code in (None, case.code))


def expected(case, defect):
    """The EXPECTED_FAILURES entry excusing `defect` in `case`, or None."""
    return next((k for k in EXPECTED_FAILURES if matches(k, case) and k[4] == defect), None)


def outcome(run, case):
    """What the failed call's entry point returned, for --verbose."""
    if run.ended_badly():
        return run.ended_badly()[0]
    if case.scenario == CliScenario.name:
        return 'exit %d' % run.status
    r = run.results().get(case.phase)
    return '%s %s' % (case.phase, r.name if r else '-')


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('lib', help='libcl_fault.so')
    p.add_argument('entry', help='fault_entry')
    p.add_argument('clattn', help='the clattn tool')
    p.add_argument('--exhaustive', action='store_true', help='fail every call, not a sample')
    p.add_argument('--jobs', type=int, default=min(4, len(os.sched_getaffinity(0))))
    p.add_argument('--only', help='one scenario (cli-run for the tool)')
    p.add_argument('--verbose', action='store_true', help='print every case')
    p.add_argument('--list-cases', action='store_true',
                   help='print the cases the clean runs give, and run none')
    args = p.parse_args()
    args.lib, args.entry, args.clattn = (os.path.abspath(x) for x in
                                         (args.lib, args.entry, args.clattn))
    return args


def list_scenarios(args, tmp):
    """Runs each scenario once without a fault. Returns (77 when there is no
    device, else 0; [(runner, name, cases)]; the clean runs' own defects)."""
    entries, cli = EntryScenarios(args, tmp), CliScenario(args, tmp)
    out, failures = [], []
    for name in entries.names() + [cli.name]:
        if args.only and name != args.only:
            continue
        runner = cli if name == cli.name else entries
        status, calls, defects = cli.listing() if runner is cli else entries.listing(name)
        if status == 77:
            return 77, [], []
        failures += [('%s (no fault)' % name, d, m) for d, m in defects]
        phases = None if runner is cli else PHASES
        out.append((runner, name, plan(name, calls, phases, args.exhaustive)))
    return 0, out, failures


class Tally:
    """The judged runs: new defects, listed ones, notes."""

    def __init__(self, failures):
        self.failures = list(failures)  # (where, defect, message)
        self.expected = collections.defaultdict(list)  # EXPECTED_FAILURES key -> cases
        self.notes = collections.defaultdict(list)  # (scenario, defect) -> (case, message)

    def add(self, case, defects):
        for defect, msg in defects:
            key = expected(case, defect)
            if defect in NOTES:
                self.notes[(case.scenario, defect)].append((case, msg))
            elif key:
                self.expected[key].append(case)
            else:
                self.failures.append((describe(case), defect, msg))


def run_all(args, jobs, tally):
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(runner.run_case, case): case for runner, case in jobs}
        for fut in concurrent.futures.as_completed(futures):
            case = futures[fut]
            run, defects = fut.result()
            if args.verbose:
                print('%-60s %-24s %s' % (describe(case), outcome(run, case),
                                          ' '.join(d for d, _ in defects) or 'ok'))
            tally.add(case, defects)


def reproduction(args):
    return ('reproduce one: CL_FAULT=<function>:<n>[:<code>] CL_FAULT_CALLERS=%s '
            'CL_FAULT_LOG=calls.log CL_FAULT_LEAKS=leaks.txt LD_PRELOAD=%s %s <scenario>'
            % (CALLERS, args.lib, args.entry))


def report(args, tally, stale):
    for where, defect, msg in sorted(tally.failures):
        print('FAIL %s: %s: %s' % (where, defect, msg))
    if tally.failures:
        print(reproduction(args))
    for key, cases in tally.expected.items():
        print('XFAIL %s (%s) in %d runs: %s' % (key[4], EXPECTED_FAILURES[key], len(cases),
                                              ', '.join(sorted(describe(c) for c in cases))))
    for (scenario, defect), seen in sorted(tally.notes.items()):
        print('NOTE %s: %s in %d runs, e.g. %s: %s' % (scenario, defect, len(seen),
                                                    fault_spec(seen[0][0]), seen[0][1]))
    for key in stale:
        print('FIXED? %s no longer shows %s: remove it from EXPECTED_FAILURES' % (key[:4],
                                                                                 key[4]))


def main():
    args = parse_args()
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix='clattn-fault.') as tmp:
        status, scenarios, failures = list_scenarios(args, tmp)
        if status == 77:
            print('SKIP: no OpenCL device')
            return 77
        jobs = [(runner, case) for runner, _, cases in scenarios for case in cases]
        if args.list_cases:
            for _, case in jobs:
                print('%s %s' % (describe(case), case.phase))
            return 0
        tally = Tally(failures)
        run_all(args, jobs, tally)
    # Only entries whose cases ran this time can be found fixed.
    stale = [k for k in EXPECTED_FAILURES
             if k not in tally.expected and any(matches(k, c) for _, c in jobs)]
    report(args, tally, stale)
    print('%d runs over %d scenarios in %.1f s: %d new defects, %d expected, %d listed but '
          'not seen' % (len(jobs), len(scenarios), time.monotonic() - t0, len(tally.failures),
                        sum(len(c) for c in tally.expected.values()), len(stale)))
    return 1 if tally.failures or stale else 0


if __name__ == '__main__':
    sys.exit(main())
