export type { CrashDrillOptions, CrashDrillSandbox, CrashPoint } from './crash-drill.js';
export { CRASH_POINTS, runCrashDrill } from './crash-drill.js';
export { criteriaFor, oracleAbsenceProvenAfterMs, oracleResendSafe, readCard, skipReason } from './criteria.js';
// The drill without vitest (for the CLI's `retrysafe drill` and scripts); `./conformance` adds runConformance.
export { disposeDrillContext, runDrill, runScenario, writeSummary } from './drill.js';
export { createDrillClock, seededRandom } from './drill-clock.js';
export { createDrillContext, DEFAULT_DRILL_TIMEOUT_MS } from './drill-harness.js';
export type * from './drill-types.js';
export { SCENARIOS } from './drill-types.js';
export * from './fault-proxy.js';
export { wrapAdapter } from './wrap-adapter.js';
