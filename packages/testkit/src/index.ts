export type { CrashDrillOptions, CrashDrillReport, CrashDrillSandbox, CrashPoint } from './crash-drill.js';
export { CRASH_POINTS, runCrashDrill } from './crash-drill.js';
export type { CardAbilities } from './criteria.js';
export { criteriaFor, oracleAbsenceProvenAfterMs, oracleResendSafe, readCard, skipReason } from './criteria.js';
// The drill without vitest (for the CLI's `retrysafe drill` and scripts); `./conformance` adds runConformance.
export type { DrillReport, DrillSummary } from './drill.js';
export { disposeDrillContext, runDrill, runScenario, writeSummary } from './drill.js';
export type { DrillClock } from './drill-clock.js';
export { createDrillClock, seededRandom } from './drill-clock.js';
export type { DrillContext } from './drill-harness.js';
export { createDrillContext, DEFAULT_DRILL_TIMEOUT_MS } from './drill-harness.js';
export type * from './drill-types.js';
export { SCENARIOS } from './drill-types.js';
export type * from './fault-proxy.js';
export { startFaultProxy } from './fault-proxy.js';
export { wrapAdapter } from './wrap-adapter.js';
