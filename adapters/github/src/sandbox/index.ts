export {
  DRILL_OWNER,
  DRILL_REPO,
  DRILL_TOKEN,
  drillCommentParams,
  drillIssueParams,
  drills,
  type GitHubDrill,
  gitHubDrill,
  gitHubDrillFaults,
} from './github-drills.js';
export {
  type FaultScript,
  type GitHubSandbox,
  type GitHubSandboxOptions,
  type SandboxComment,
  type SandboxFault,
  type SandboxIssue,
  type SandboxKind,
  type SandboxRequest,
  startGitHubSandbox,
} from './github-sandbox.js';
