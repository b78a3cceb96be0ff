export { main, EXIT, type Io } from './cli.js';
export { drillCommand, drillTable, drillText, drillJunit, showCount, type DrillCommandReport, type DrillRow, type DrillExpected, type DrillObserved, type DrillAdapterSummary } from './commands/drill.js';
export { cardsCommand, type CardsCommandResult, type CardsCheckProblem } from './commands/cards.js';
export { demoCommand, demoSummary, type DemoReport, type DemoStepReport } from './commands/demo.js';
export { ledgerLs, ledgerShow, ledgerHandoffs, ledgerResolve, ledgerResolveAll, openTarget, type LedgerTarget, type ResolveOptions, type ResolveAllOptions, type ResolveAllReport, type ResolveAllRow } from './commands/ledger.js';
export { renderHtmlReport, type HtmlReportInput } from './report/html.js';
export { loadAdapters, cardsOf, ADAPTER_NAMES, UsageError, type AdapterEntry, type NamedCard } from './registry.js';
