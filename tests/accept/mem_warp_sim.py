#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# A warp model for tests/accept/device_mem_elect.sh: runs the kernels of
# a module that `gputrace --dry-run -d ptx` printed, 32 lanes, under the
# least friendly scheduling independent thread scheduling allows: after a
# divergent branch the lanes furthest ahead run first, and lanes meet
# again only at a warp-synchronous instruction (bar.warp.sync, vote.sync,
# shfl.sync, match.sync, redux.sync) naming them.  Values the model cannot
# know (loads, calls) are unknown, and a branch on an unknown predicate is
# not taken by any lane (the clauses' such branches are uniform: a
# context word, a vote), the lane's second time there taken (a loop
# ends).  The election (activemask, the site's mask,
# brev, bfind, laneid, setp) is computed exactly.
#
# Usage: mem_warp_sim.py MODULE LANES taken|not: the warp's lanes, and
# which way the program's own unknown branches go the first time.
# Printed, one line per gpu:mem site: "KERNEL insn N: U updates, each run
# by L lanes, instruction run by G groups" where L lists how many updates
# each map update statement (call, red, atom) of the site's clauses made
# each time the warp got there: one is right.  A red or atom makes one
# per lane whose guard holds; a call one per lane, except a warp-uniform
# one (op flag DEVRT_OP_F_UNI, the _u entry points, lookup, delete),
# which the group's lanes make together: one per group that calls.  G is
# how many separate groups ran the memory instruction itself (1: the
# warp together); 0s: the model did not get there.
import re
import sys

FULL = (1 << 32) - 1


def parse(text):
    """Kernels: name -> list of (kind, payload) statements."""
    kernels = {}
    cur = None
    for raw in text.splitlines():
        line = raw.split('//', 1)[0].strip() if not raw.strip().startswith(
            '// gputrace mem:') else raw.strip()
        m = re.match(r'\.(visible\s+)?\.entry\s+(\w+)', line)
        if m:
            cur = kernels.setdefault(m.group(2), [])
            continue
        if cur is None or not line:
            continue
        if line.startswith('// gputrace mem:'):
            cur.append(('site', line))
            continue
        if line in ('{', '}', ')') or line.startswith('.'):
            continue
        m = re.match(r'^([$%\w]+):$', line)
        if m:
            cur.append(('label', m.group(1)))
            continue
        for st in line.split(';'):
            st = st.strip()
            if st:
                cur.append(('insn', st))
    return kernels


def split_ops(s):
    out, depth, tok = [], 0, ''
    for ch in s:
        if ch in '{[':
            depth += 1
        elif ch in '}]':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(tok.strip())
            tok = ''
        else:
            tok += ch
    if tok.strip():
        out.append(tok.strip())
    return out


F_UNI = 0x400       # gpucode/devrt.h DEVRT_OP_F_UNI


def uniform_call(args):
    """A runtime call the calling lanes make together (one update)."""
    name = args[0] if args else ''
    if name.startswith('('):    # call (ret), NAME, (args)
        name = args[1]
    if name.endswith('_u') or 'lookup' in name or 'delete' in name:
        return True
    last = args[-1].strip('() ').split(',')[-1].strip()
    return name.startswith('__gt_rt_agg') and re.match(r'^\d+$', last) \
        and int(last) & F_UNI != 0


SYNC = ('bar.warp.sync', 'vote.sync', 'shfl.sync', 'match.', 'redux.sync')


class Warp:
    def __init__(self, body, lanes, policy):
        self.body = body
        self.policy = policy
        self.labels = {}
        for i, (k, p) in enumerate(body):
            if k == 'label':
                if p in self.labels:
                    raise SystemExit('label %s defined twice' % p)
                self.labels[p] = i
        self.regs = {l: {} for l in lanes}
        # groups: [pc, lanes (frozenset), waiting]
        self.groups = [[0, frozenset(lanes), False]]
        self.visits = {}    # (lane, statement index) -> unknown branches
        self.ran = {}       # statement index -> lanes that ran it
        self.groups_at = {}  # statement index -> groups that ran it
        self.made = {}      # update statement index -> updates made

    def val(self, lane, op):
        op = op.strip()
        if op == '%laneid':
            return lane
        if re.match(r'^-?\d+$', op):
            return int(op) & ((1 << 64) - 1)
        return self.regs[lane].get(op)

    def run(self):
        steps = 0
        while True:
            live = [g for g in self.groups if not g[2] and
                    g[0] < len(self.body)]
            if not live:
                if any(g[2] for g in self.groups):
                    raise SystemExit('deadlock at %s' % [
                        self.body[g[0]] for g in self.groups if g[2]])
                return
            g = max(live, key=lambda g: g[0])   # the furthest ahead first
            self.step(g)
            steps += 1
            if steps > 200000:
                raise SystemExit('no end')

    def step(self, g):
        pc, lanes, _ = g
        kind, st = self.body[pc]
        if kind != 'insn':
            g[0] += 1
            return
        self.ran.setdefault(pc, []).extend(lanes)
        self.groups_at[pc] = self.groups_at.get(pc, 0) + 1
        guard = None
        m = re.match(r'^@(!?)(%[\w]+)\s+(.*)$', st)
        if m:
            guard = (m.group(1) == '!', m.group(2))
            st = m.group(3)
        parts = st.split(None, 1)
        op, args = parts[0], split_ops(parts[1]) if len(parts) > 1 else []
        if op.startswith(SYNC):
            mask = self.val(min(lanes), args[-1]) if args else None
            want = frozenset(l for l in self.regs if mask is None and
                             l in lanes or mask is not None and
                             mask >> l & 1)
            waiting = [h for h in self.groups if h is not g and h[2] and
                       h[0] == pc]
            have = set(lanes).union(*[h[1] for h in waiting])
            if not want <= have:
                g[2] = True
                return
            for h in waiting:
                self.groups.remove(h)
            g[1] = lanes = frozenset(have)
            g[2] = False
        if op in ('ret', 'exit'):
            self.groups.remove(g)
            return
        take = set()
        for l in lanes:
            p = True
            if guard:
                v = self.val(l, guard[1])
                if v is not None:
                    p = bool(v) != guard[0]
                else:
                    # unknown: ours not taken; the program's as POLICY
                    # says the first time a lane gets there, the other
                    # way after (a loop ends)
                    n = self.visits.get((l, pc), 0)
                    self.visits[(l, pc)] = n + 1
                    ours = re.search(r'%gt_|%gq_|\$__gt', st)
                    p = not ours and (n == 0) == self.policy
            if op.startswith('bra'):
                if p:
                    take.add(l)
                continue
            if p:
                self.exec(l, op, args, lanes)
                if op.startswith(('red', 'atom')) or op == 'call' and \
                        not uniform_call(args):
                    self.made[pc] = self.made.get(pc, 0) + 1
        if op == 'call' and uniform_call(args):
            self.made[pc] = self.made.get(pc, 0) + 1
        if op.startswith('bra'):
            stay = lanes - take
            if take:
                tgt = self.labels[args[0]]
                if stay:
                    self.groups.append([tgt, frozenset(take), False])
                    g[1] = frozenset(stay)
                else:
                    g[0] = tgt
                    return
        g[0] += 1

    def exec(self, l, op, args, lanes):
        r = self.regs[l]
        if not args:
            return
        d = args[0]
        a = [self.val(l, x) for x in args[1:]]
        v = None
        base = op.split('.')[0]
        if base == 'activemask':
            v = sum(1 << x for x in lanes)
        elif base in ('mov', 'cvt') and len(a) == 1 and not d.startswith('{'):
            v = a[0]
            if v is not None and ('u32' in op or 'b32' in op):
                v &= FULL
        elif base == 'brev' and a[0] is not None:
            v = int('{:032b}'.format(a[0] & FULL)[::-1], 2)
        elif base == 'bfind' and a[0] is not None:
            x = a[0] & FULL
            v = FULL if x == 0 else x.bit_length() - 1
            if '.shiftamt' in op and x:
                v = 31 - v
        elif base == 'popc' and a[0] is not None:
            v = bin(a[0]).count('1')
        elif base in ('and', 'or', 'shl') and None not in a and len(a) == 2:
            v = {'and': a[0] & a[1], 'or': a[0] | a[1],
                 'shl': a[0] << min(a[1], 64)}[base] & ((1 << 64) - 1)
        elif base == 'not' and a[0] is not None:
            v = ~a[0] & FULL
        elif base == 'setp' and len(a) == 2 and None not in a:
            cmp = op.split('.')[1]
            if cmp in ('eq', 'ne') and len(op.split('.')) == 3:
                v = int((a[0] == a[1]) == (cmp == 'eq'))
        if d.startswith('['):
            return
        for reg in d.strip('{}').split(','):
            r[reg.strip()] = None
        r[d] = v


def main():
    text = open(sys.argv[1]).read()
    lanes = range(int(sys.argv[2]))
    policy = sys.argv[3] == 'taken'
    for name, body in parse(text).items():
        sites = [i for i, (k, _) in enumerate(body) if k == 'site']
        if not sites:
            continue
        w = Warp(body, lanes, policy)
        w.run()
        for n, s in enumerate(sites):
            end = sites[n + 1] if n + 1 < len(sites) else len(body)
            ups = [i for i in range(s, end) if body[i][0] == 'insn' and
                   re.match(r'^(@!?%\w+\s+)?(call|red|atom)[ .]',
                            body[i][1]) and '%gq_' in body[i][1]]
            # the instruction itself: the first one not ours after the block
            ins = next((i for i in range(s, end) if body[i][0] == 'insn' and
                        '%gt_' not in body[i][1] and '%gq_' not in
                        body[i][1] and '$__gt' not in body[i][1]), None)
            insn = re.search(r'insn (\d+)', body[s][1]).group(1)
            # passes: how often the warp got there (a loop: more than once)
            passes = max(1, len(w.ran.get(ins, [])) // len(lanes))
            print('%s insn %s: %d updates, each run by %s lanes, '
                  'instruction run by %s groups' % (
                      name, insn, len(ups),
                      ' '.join('%g' % (w.made.get(i, 0) / passes)
                               for i in ups),
                      '%g' % (w.groups_at.get(ins, 0) / passes)))


main()
