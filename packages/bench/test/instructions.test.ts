// `--part=instructions --where` sorts callgrind's native function names into a few places the
// instructions go; a wrong bucket would send the next person optimising the wrong thing.
import { describe, expect, it } from 'vitest';
import { categorize, eventTotals, lastLevelMisses, parseAnnotated, splitByCategory, withoutGcAndCompiler } from '../src/instructions.mjs';

describe('instructions --where: where a native function counts', () => {
  it.each([
    ['???:deflate_slow [/usr/bin/node]', 'zlib'],
    ['???:deflateSetDictionary [/usr/bin/node]', 'zlib'],
    ['???:pqdownheap.constprop.0 [/usr/bin/node]', 'zlib'],
    ['???:sqlite3VdbeExec [/x/better_sqlite3.node]', 'sqlite'],
    ['???:walChecksumBytes [/x/better-sqlite3/build/Release/better_sqlite3.node]', 'sqlite'],
    ['???:sha256_block_data_order_avx2 [/usr/bin/node]', 'hashing'],
    ['???:v8::internal::JsonStringifier::SerializeString(v8::internal::Handle<v8::internal::String>) [/usr/bin/node]', 'json'],
    ['???:v8::internal::JsonParser<unsigned char>::ScanJsonString(bool) [/usr/bin/node]', 'json'],
    ['???:v8::internal::compiler::GraphReducer::ReduceTop() [/usr/bin/node]', 'compiler'],
    ['???:v8::internal::Sweeper::RawSweep(v8::internal::Page*) [/usr/bin/node]', 'gc'],
    ['./string/../sysdeps/x86_64/multiarch/memset-vec-unaligned-erms.S:__memset_avx2_unaligned_erms [/usr/lib/x86_64-linux-gnu/libc.so.6]', 'libc'],
    ['???:Builtins_KeyedLoadIC_Megamorphic [/usr/bin/node]', 'builtins'],
    ['???:0x000000000d07e800 [???]', 'jit'],
    ['???:v8::String::WriteUtf8(v8::Isolate*, char*, int, int*, int) const [/usr/bin/node]', 'node/v8 runtime'],
    ['???:detail::sprp(unsigned long long, unsigned long long) [/usr/bin/node]', 'startup'],
    ['???:v8::internal::(anonymous namespace)::IterateObjectCache(v8::internal::Isolate*, std::vector<v8::internal::Object, std::allocator<v8::internal::Object> >*, v8::internal::Root, v8::internal::RootVisitor*) [/usr/bin/node]', 'gc'],
    ['???:v8::internal::LiveObjectRange<(v8::internal::LiveObjectIterationMode)0>::iterator::AdvanceToNextValidObject() [/usr/bin/node]', 'gc'],
    ['???:v8::internal::HashSeed::InitializeRoots(v8::internal::Isolate*) [/usr/bin/node]', 'startup'],
  ])('%s → %s', (name, cat) => {
    expect(categorize(name)).toBe(cat);
  });
});

describe('instructions --where: the figure to compare builds on', () => {
  it('leaves out only the garbage collector, the optimising compiler and start-up', () => {
    // A late compile can leave a negative share (the shorter run compiled more): it is left out as well.
    expect(withoutGcAndCompiler({ jit: 223_000, sqlite: 69_000, builtins: 59_000, gc: 12_000, compiler: -16_000, libc: 10_000 })).toBe(361_000);
    // The start-up hash seed's random prime test lands in the window as a difference of two runs' start-ups.
    expect(withoutGcAndCompiler({ jit: 100, startup: -2_159 })).toBe(100);
    expect(withoutGcAndCompiler({ gc: 5, compiler: 7, startup: 9 })).toBe(0);
  });
});

describe('instructions --where: the split of the window', () => {
  it('sums to the window: a function of one run only (JIT code moves between runs) counts on its side', () => {
    const before = new Map([['???:0x000000000d000000 [???]', 3_000_000], ['???:sqlite3VdbeExec [/x/better_sqlite3.node]', 1_000_000]]);
    const after = new Map([['???:0x000000000d100000 [???]', 9_000_000], ['???:sqlite3VdbeExec [/x/better_sqlite3.node]', 4_000_000]]);
    // jit: (9M - 3M) / 1000; sqlite: (4M - 1M) / 1000. Counting only the longer run's functions gave jit 9,000.
    expect(splitByCategory(before, after, 1000)).toEqual({ jit: 6000, sqlite: 3000 });
  });
});

describe('instructions --lines: the footprint from callgrind --cache-sim', () => {
  // The two lines `grep -m2 -E '^(events|summary|totals):'` takes from a real output file (runner, PostgreSQL, 256 KB LL).
  const simulated = 'events: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw\nsummary: 3688757575 1043075910 558253238 29855826 25356636 6913553 21809103 15202014 5457456\n';

  it('reads each event by the name the events line gives it', () => {
    const t = eventTotals(simulated);
    expect(t.Ir).toBe(3688757575);
    expect(t.ILmr).toBe(21809103);
    expect(t.DLmw).toBe(5457456);
    expect(eventTotals('events: Ir\ntotals: 1234\n')).toEqual({ Ir: 1234 });
  });

  it('counts last-level misses as the lines not held: instruction misses as code, data read and write misses as data', () => {
    expect(lastLevelMisses(eventTotals(simulated))).toEqual({ code: 21809103, data: 15202014 + 5457456 });
    // Without --cache-sim there is nothing to count.
    expect(lastLevelMisses(eventTotals('events: Ir\nsummary: 10\n'))).toEqual({ code: 0, data: 0 });
  });

  it('refuses an output without its events or summary line', () => {
    expect(() => eventTotals('summary: 10\n')).toThrow(/no events or summary/);
    expect(() => eventTotals('events: Ir\n')).toThrow(/no events or summary/);
  });
});

describe('instructions --where with --lines: callgrind_annotate lines of one or more events', () => {
  // As `callgrind_annotate --show=DLmr,DLmw` prints them (`.` where a function has none of an event).
  const twoEvents = [
    '--------------------------------------------------------------------------------',
    '15,167,993 (100.0%) 5,479,988 (100.0%)  PROGRAM TOTALS',
    'DLmr               DLmw              file:function',
    '1,531,918 (10.10%)   8,175 ( 0.15%)  ???:Builtins_LoadIC [/usr/bin/node]',
    '   10,418 ( 0.07%)   8,794 ( 0.16%)  ???:v8::internal::Scanner::Next() [/usr/bin/node]',
    '        .                .           ???:ossl_tolower [/usr/bin/node]',
    '        .              255 ( 0.00%)  ???:0x000000000d153080 [???]',
    '      360 ( 0.00%)       .           ???:0x000000000d153080 [???]',
  ].join('\n');

  it('sums the shown events per function, a listed-twice function adds up, and skips the totals', () => {
    const m = parseAnnotated(twoEvents);
    expect(m.get('???:Builtins_LoadIC [/usr/bin/node]')).toBe(1_531_918 + 8_175);
    expect(m.get('???:v8::internal::Scanner::Next() [/usr/bin/node]')).toBe(10_418 + 8_794);
    expect(m.get('???:ossl_tolower [/usr/bin/node]')).toBe(0);
    expect(m.get('???:0x000000000d153080 [???]')).toBe(255 + 360);
    expect([...m.keys()].some((k) => k.includes('TOTALS') || k.includes('file:function'))).toBe(false);
  });

  it('reads one event as before (instructions: no percentages in a whole-program listing)', () => {
    const m = parseAnnotated('84,735,687  ???:sha256_block_data_order_avx2 [/usr/bin/node]\n4,761,450 ( 0.10%)  ???:Builtins_LoadIC [/usr/bin/node]\n');
    expect(m.get('???:sha256_block_data_order_avx2 [/usr/bin/node]')).toBe(84_735_687);
    expect(m.get('???:Builtins_LoadIC [/usr/bin/node]')).toBe(4_761_450);
  });

  it('keeps the categories of lines down to a few per op (instructions: 500)', () => {
    const before = new Map([['???:Builtins_LoadIC [/usr/bin/node]', 10_000]]);
    const after = new Map([['???:Builtins_LoadIC [/usr/bin/node]', 40_000]]);
    expect(splitByCategory(before, after, 1000, 10)).toEqual({ builtins: 30 });
    expect(splitByCategory(before, after, 1000)).toEqual({});
  });
});
