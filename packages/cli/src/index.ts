export { EXIT, type Io, main } from './cli.js';
export { type CardsCheckProblem, type CardsCommandResult, cardsCommand } from './commands/cards/index.js';
export { type DemoReport, type DemoStepReport, demoCommand, demoSummary } from './commands/demo/index.js';
export {
  type DrillAdapterSummary,
  type DrillCommandReport,
  type DrillExpected,
  type DrillObserved,
  type DrillRow,
  drillCommand,
} from './commands/drill/index.js';
export { drillJunit, drillTable, drillText, showCount } from './commands/drill/text.js';
export { ledgerHandoffs } from './commands/ledger/handoffs/index.js';
export { ledgerLs } from './commands/ledger/ls/index.js';
export { ledgerResolve, type ResolveOptions } from './commands/ledger/resolve/index.js';
export {
  ledgerResolveAll,
  type ResolveAllOptions,
  type ResolveAllReport,
  type ResolveAllRow,
} from './commands/ledger/resolve-all/index.js';
export { ledgerShow } from './commands/ledger/show/index.js';
export { type LedgerTarget, openTarget } from './commands/ledger/target.js';
export { UsageError } from './errors.js';
export { ADAPTER_NAMES, type AdapterEntry, cardsOf, loadAdapters, type NamedCard } from './registry.js';
export { type HtmlReportInput, renderHtmlReport } from './report/html.js';
