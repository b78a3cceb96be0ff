export { main } from './cli.js';
export type { Io } from './command.js';
export { type CardsCommandResult, cardsCommand } from './commands/cards/index.js';
export { type DemoReport, demoCommand } from './commands/demo/index.js';
export { type DrillCommandReport, drillCommand } from './commands/drill/index.js';
export { drillJunit } from './commands/drill/text.js';
export { ledgerHandoffs } from './commands/ledger/handoffs/index.js';
export { ledgerLs } from './commands/ledger/ls/index.js';
export { ledgerResolve, type ResolveOptions } from './commands/ledger/resolve/index.js';
export {
  ledgerResolveAll,
  type ResolveAllOptions,
  type ResolveAllReport,
} from './commands/ledger/resolve-all/index.js';
export { ledgerShow } from './commands/ledger/show/index.js';
export { type HtmlReportInput, renderHtmlReport } from './report/html.js';
