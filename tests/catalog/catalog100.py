# ruff: noqa: E501  (a data table: one tool per entry reads better than wrapped lines)
"""A realistic 100-tool catalog (the kind a few MCP servers add up to) and prompts for it.

Seventeen core-like tools plus servers for GitHub, Jira, Slack, Kubernetes, Docker, AWS,
Postgres, a browser, calendar/mail, Sentry, Terraform, npm and docs search: each tool with a
one-line description of 8-25 words and 1-6 parameters with their own descriptions, some
enums and nested objects, as MCP servers publish them. Used by tests/catalog and by
benchmarks/catalog.py. Each query names the tool a person would expect to be used.
"""

from __future__ import annotations

from typing import Any

from acpd.mcpclient.spec import McpArguments, McpToolSpec
from acpd.tools.spec import Effect, ToolOutput, redaction


def s(description: str, enum: list[str] | None = None) -> dict[str, Any]:
    prop: dict[str, Any] = {"type": "string", "description": description}
    if enum:
        prop["enum"] = enum
    return prop


def i(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


def obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)[:1]}


REPO = {"owner": s("Repository owner or organisation"), "repo": s("Repository name")}
NS = {"namespace": s("Kubernetes namespace, default when omitted")}
STATES = ["open", "closed", "all"]

TOOLS: list[tuple[str, str, str, dict[str, Any]]] = [
    # server, name, description, schema
    ("core", "read_file", "Read a text file from the workspace; use offset and limit for large files",
     obj({"path": s("Workspace-relative path"), "offset": i("First line"), "limit": i("Lines")})),
    ("core", "write_file", "Create or overwrite a file in the workspace with the given content",
     obj({"path": s("Path"), "content": s("Full new content")}, ["path", "content"])),
    ("core", "edit_file", "Replace one exact unique occurrence of a string in a file with another",
     obj({"path": s("Path"), "old_string": s("Text to find"), "new_string": s("Replacement")},
         ["path", "old_string", "new_string"])),
    ("core", "list_directory", "List the entries of a directory, marking files, directories and symlinks",
     obj({"path": s("Directory")})),
    ("core", "find_path", "Find paths under a directory that match a glob pattern such as **/*.py",
     obj({"pattern": s("Glob pattern"), "path": s("Where to start")})),
    ("core", "grep", "Search file contents with a regular expression and return matching lines",
     obj({"pattern": s("Regular expression"), "path": s("Directory or file"),
          "case_sensitive": {"type": "boolean", "description": "Match case"}})),
    ("core", "bash", "Run a shell command in the workspace and return its output and exit status",
     obj({"command": s("The command line"), "timeout": i("Seconds")})),
    ("core", "delete_path", "Delete a file or a directory recursively from the workspace",
     obj({"path": s("Path to delete")})),
    ("core", "move_path", "Move or rename a file or directory; the destination must not exist",
     obj({"source": s("From"), "destination": s("To")}, ["source", "destination"])),
    ("core", "copy_path", "Copy a file or a directory to a new location in the workspace",
     obj({"source": s("From"), "destination": s("To")}, ["source", "destination"])),
    ("core", "create_directory", "Create a directory including any missing parent directories",
     obj({"path": s("Directory to create")})),
    ("core", "fetch", "Fetch a public https URL and return the page as markdown or plain text",
     obj({"url": s("https URL"), "format": s("Output format", ["markdown", "text"])})),
    ("core", "update_plan", "Record or revise your plan as a list of steps with statuses",
     obj({"entries": {"type": "array", "items": obj({
         "content": s("Step"), "status": s("Status", ["pending", "in_progress", "completed"]),
         "priority": s("Priority", ["high", "medium", "low"])},
         ["content", "status", "priority"])}})),
    ("core", "diagnostics", "Run the project's checkers (ruff, mypy, cargo, tsc, eslint) and return their diagnostics",
     obj({"checker": s("Only this checker", ["cargo", "clippy", "ruff", "mypy", "tsc", "eslint"])})),
    ("core", "memory_save", "Save a note to long-term memory so later sessions can recall it",
     obj({"content": s("What to remember")})),
    ("core", "memory_search", "Search long-term memory for notes saved in earlier sessions",
     obj({"query": s("Words to look for"), "limit": i("Most results")})),
    ("core", "ask_user", "Ask the user one question and wait for the answer when you cannot go on",
     obj({"question": s("The question")})),
    # GitHub
    ("github", "create_issue", "Open a new issue in a GitHub repository with a title, body and labels",
     obj({**REPO, "title": s("Issue title"), "body": s("Markdown body"),
          "labels": {"type": "array", "items": s("Label")}}, ["owner", "repo", "title"])),
    ("github", "list_issues", "List issues of a GitHub repository filtered by state, labels or assignee",
     obj({**REPO, "state": s("Issue state", STATES), "labels": s("Comma-separated labels")})),
    ("github", "get_issue", "Get one GitHub issue with its comments by number",
     obj({**REPO, "issue_number": i("Issue number")}, ["owner", "repo", "issue_number"])),
    ("github", "add_issue_comment", "Add a comment to an existing GitHub issue or pull request",
     obj({**REPO, "issue_number": i("Number"), "body": s("Comment")},
         ["owner", "repo", "issue_number", "body"])),
    ("github", "create_pull_request", "Open a pull request on GitHub from a head branch into a base branch",
     obj({**REPO, "title": s("Title"), "head": s("Head branch"), "base": s("Base branch"),
          "body": s("Description"), "draft": {"type": "boolean", "description": "Draft"}},
         ["owner", "repo", "title", "head", "base"])),
    ("github", "list_pull_requests", "List pull requests of a GitHub repository by state and base branch",
     obj({**REPO, "state": s("State", STATES), "base": s("Base branch")})),
    ("github", "merge_pull_request", "Merge a GitHub pull request with a merge, squash or rebase strategy",
     obj({**REPO, "pull_number": i("Number"), "merge_method": s("How", ["merge", "squash", "rebase"])},
         ["owner", "repo", "pull_number"])),
    ("github", "get_pull_request_diff", "Get the unified diff of a GitHub pull request",
     obj({**REPO, "pull_number": i("Number")}, ["owner", "repo", "pull_number"])),
    ("github", "search_code", "Search source code across GitHub repositories with GitHub code search syntax",
     obj({"query": s("Search query"), "per_page": i("Results per page")})),
    ("github", "list_workflow_runs", "List recent GitHub Actions workflow runs and their conclusions for a repository",
     obj({**REPO, "branch": s("Branch"), "status": s("Status", ["queued", "in_progress", "completed", "failure", "success"])})),
    ("github", "rerun_workflow", "Re-run a failed GitHub Actions workflow run",
     obj({**REPO, "run_id": i("Workflow run id")}, ["owner", "repo", "run_id"])),
    ("github", "create_release", "Create a GitHub release for a tag with generated release notes",
     obj({**REPO, "tag_name": s("Tag"), "name": s("Release title"), "prerelease": {"type": "boolean", "description": "Pre-release"}},
         ["owner", "repo", "tag_name"])),
    # Jira
    ("jira", "jira_create_ticket", "Create a Jira ticket in a project with summary, description, type and priority",
     obj({"project": s("Project key"), "summary": s("Summary"), "description": s("Description"),
          "issue_type": s("Type", ["Bug", "Task", "Story", "Epic"]),
          "priority": s("Priority", ["Highest", "High", "Medium", "Low", "Lowest"])},
         ["project", "summary", "issue_type"])),
    ("jira", "jira_search", "Search Jira tickets with a JQL query and return keys, summaries and statuses",
     obj({"jql": s("JQL query"), "max_results": i("Most results")})),
    ("jira", "jira_transition", "Move a Jira ticket to another workflow status such as In Progress or Done",
     obj({"key": s("Ticket key"), "status": s("Target status")}, ["key", "status"])),
    ("jira", "jira_comment", "Add a comment to a Jira ticket",
     obj({"key": s("Ticket key"), "body": s("Comment")}, ["key", "body"])),
    ("jira", "jira_assign", "Assign a Jira ticket to a user by account id or email",
     obj({"key": s("Ticket key"), "assignee": s("User")}, ["key", "assignee"])),
    ("jira", "jira_sprint_report", "Summarise the active sprint of a Jira board: committed, done and remaining points",
     obj({"board_id": i("Board id")})),
    # Slack
    ("slack", "slack_post_message", "Post a message to a Slack channel or thread",
     obj({"channel": s("Channel id or #name"), "text": s("Message text"), "thread_ts": s("Thread timestamp")},
         ["channel", "text"])),
    ("slack", "slack_search_messages", "Search Slack messages across channels the bot can read",
     obj({"query": s("Search words"), "count": i("Most results")})),
    ("slack", "slack_list_channels", "List public Slack channels with their topics and member counts",
     obj({"limit": i("Most channels")})),
    ("slack", "slack_channel_history", "Read the recent messages of a Slack channel",
     obj({"channel": s("Channel"), "limit": i("Messages")})),
    ("slack", "slack_user_info", "Look up a Slack user's profile, title and time zone",
     obj({"user": s("User id")})),
    # Kubernetes
    ("k8s", "kubectl_get_pods", "List pods in a Kubernetes namespace with their status and restarts",
     obj({**NS, "selector": s("Label selector")})),
    ("k8s", "kubectl_logs", "Fetch container logs of a Kubernetes pod, optionally following or tailing",
     obj({"pod": s("Pod name"), **NS, "container": s("Container"), "tail": i("Last lines")}, ["pod"])),
    ("k8s", "kubectl_describe", "Describe a Kubernetes resource with its events and conditions",
     obj({"kind": s("Resource kind", ["pod", "deployment", "service", "node", "ingress", "job"]),
          "name": s("Name"), **NS}, ["kind", "name"])),
    ("k8s", "kubectl_apply", "Apply a Kubernetes manifest to the cluster",
     obj({"manifest": s("YAML manifest"), **NS, "dry_run": s("Dry run", ["none", "client", "server"])},
         ["manifest"])),
    ("k8s", "kubectl_scale", "Scale a Kubernetes deployment or statefulset to a number of replicas",
     obj({"name": s("Deployment"), "replicas": i("Replicas"), **NS}, ["name", "replicas"])),
    ("k8s", "kubectl_rollout_restart", "Restart a Kubernetes deployment with a rolling update",
     obj({"name": s("Deployment"), **NS})),
    ("k8s", "kubectl_rollout_undo", "Roll back a Kubernetes deployment to its previous revision",
     obj({"name": s("Deployment"), **NS, "to_revision": i("Revision")})),
    ("k8s", "kubectl_top", "Show CPU and memory usage of Kubernetes pods or nodes",
     obj({"what": s("Pods or nodes", ["pods", "nodes"]), **NS})),
    ("k8s", "helm_upgrade", "Install or upgrade a Helm release from a chart with values",
     obj({"release": s("Release"), "chart": s("Chart"), **NS,
          "values": obj({"image": obj({"tag": s("Image tag"), "repository": s("Image repository")}),
                         "replicas": i("Replicas")})},
         ["release", "chart"])),
    # Docker
    ("docker", "docker_ps", "List running Docker containers with their images, ports and status",
     obj({"all": {"type": "boolean", "description": "Include stopped containers"}})),
    ("docker", "docker_build", "Build a Docker image from a Dockerfile and tag it",
     obj({"context": s("Build context"), "tag": s("Image tag"), "dockerfile": s("Dockerfile path")})),
    ("docker", "docker_run", "Run a container from a Docker image with ports, volumes and environment",
     obj({"image": s("Image"), "ports": {"type": "array", "items": s("host:container")},
          "env": {"type": "object", "additionalProperties": s("Value")}, "detach": {"type": "boolean", "description": "Detach"}})),
    ("docker", "docker_logs", "Show the logs of a Docker container",
     obj({"container": s("Container"), "tail": i("Last lines")})),
    ("docker", "docker_compose_up", "Start the services of a docker compose file in the background",
     obj({"file": s("Compose file"), "services": {"type": "array", "items": s("Service")}})),
    # AWS
    ("aws", "s3_list_objects", "List objects in an Amazon S3 bucket under a prefix",
     obj({"bucket": s("Bucket"), "prefix": s("Key prefix")})),
    ("aws", "s3_get_object", "Download an object from Amazon S3 and return its text",
     obj({"bucket": s("Bucket"), "key": s("Object key")}, ["bucket", "key"])),
    ("aws", "s3_put_object", "Upload text content to an Amazon S3 bucket under a key",
     obj({"bucket": s("Bucket"), "key": s("Key"), "body": s("Content")}, ["bucket", "key", "body"])),
    ("aws", "lambda_invoke", "Invoke an AWS Lambda function with a JSON payload and return its response",
     obj({"function_name": s("Function"), "payload": s("JSON payload")})),
    ("aws", "cloudwatch_query_logs", "Run a CloudWatch Logs Insights query over a log group and time range",
     obj({"log_group": s("Log group"), "query": s("Insights query"), "start": s("Start time"), "end": s("End time")},
         ["log_group", "query", "start", "end"])),
    ("aws", "ec2_describe_instances", "Describe Amazon EC2 instances with their state, type and addresses",
     obj({"filters": {"type": "array", "items": obj({"name": s("Filter"), "values": {"type": "array", "items": s("Value")}})}})),
    ("aws", "cost_explorer_report", "Report AWS costs by service for a date range",
     obj({"start": s("Start date"), "end": s("End date"), "granularity": s("Granularity", ["DAILY", "MONTHLY"])})),
    # Postgres
    ("pg", "pg_query", "Run a read-only SQL query against the PostgreSQL database and return rows",
     obj({"sql": s("SELECT statement"), "limit": i("Most rows")})),
    ("pg", "pg_execute", "Execute a SQL statement that changes the PostgreSQL database (INSERT, UPDATE, DDL)",
     obj({"sql": s("Statement")})),
    ("pg", "pg_list_tables", "List the tables of a PostgreSQL schema with row estimates",
     obj({"schema": s("Schema name")})),
    ("pg", "pg_describe_table", "Describe a PostgreSQL table's columns, types, indexes and constraints",
     obj({"table": s("Table"), "schema": s("Schema")})),
    ("pg", "pg_explain", "Show the PostgreSQL query plan of a statement with EXPLAIN ANALYZE",
     obj({"sql": s("Statement"), "analyze": {"type": "boolean", "description": "Run it"}})),
    ("pg", "pg_migrations_status", "Show which database migrations are applied and which are pending",
     obj({"directory": s("Migrations directory")})),
    # Browser
    ("browser", "browser_navigate", "Open a URL in the headless browser and wait for the page to load",
     obj({"url": s("URL")})),
    ("browser", "browser_click", "Click an element on the current browser page by CSS selector",
     obj({"selector": s("CSS selector")})),
    ("browser", "browser_type", "Type text into an input element on the current browser page",
     obj({"selector": s("CSS selector"), "text": s("Text")}, ["selector", "text"])),
    ("browser", "browser_screenshot", "Take a screenshot of the current browser page or one element",
     obj({"selector": s("Element"), "full_page": {"type": "boolean", "description": "Whole page"}})),
    ("browser", "browser_console_logs", "Read the JavaScript console messages of the current browser page",
     obj({"level": s("Least level", ["debug", "info", "warning", "error"])})),
    # Calendar and mail
    ("gws", "calendar_list_events", "List calendar events between two dates",
     obj({"start": s("From"), "end": s("To"), "calendar": s("Calendar id")})),
    ("gws", "calendar_create_event", "Create a calendar event with attendees, time and a video link",
     obj({"title": s("Title"), "start": s("Start"), "end": s("End"),
          "attendees": {"type": "array", "items": s("Email")}}, ["title", "start", "end"])),
    ("gws", "mail_search", "Search the mailbox for emails matching a query",
     obj({"query": s("Search query"), "max_results": i("Most results")})),
    ("gws", "mail_send", "Send an email to recipients with a subject and body",
     obj({"to": {"type": "array", "items": s("Address")}, "subject": s("Subject"), "body": s("Body")},
         ["to", "subject", "body"])),
    ("gws", "drive_search", "Search documents and spreadsheets in the shared drive",
     obj({"query": s("Search words")})),
    # Sentry
    ("sentry", "sentry_list_issues", "List unresolved Sentry error issues of a project, most frequent first",
     obj({"project": s("Project slug"), "environment": s("Environment")})),
    ("sentry", "sentry_get_event", "Get the latest Sentry event of an issue with its stack trace",
     obj({"issue_id": s("Issue id")})),
    ("sentry", "sentry_resolve_issue", "Mark a Sentry issue resolved, optionally in the next release",
     obj({"issue_id": s("Issue id"), "in_next_release": {"type": "boolean", "description": "Defer"}})),
    # Terraform
    ("tf", "terraform_plan", "Run terraform plan in a directory and summarise the resource changes",
     obj({"directory": s("Module directory"), "var_file": s("Variables file")})),
    ("tf", "terraform_apply", "Apply a saved terraform plan",
     obj({"directory": s("Module directory"), "plan_file": s("Plan file")}, ["directory", "plan_file"])),
    ("tf", "terraform_state_list", "List the resources in the terraform state",
     obj({"directory": s("Module directory")})),
    # Packages and docs
    ("npm", "npm_search", "Search the npm registry for packages matching keywords",
     obj({"query": s("Keywords")})),
    ("npm", "npm_package_info", "Show an npm package's latest version, license, dependencies and weekly downloads",
     obj({"name": s("Package")})),
    ("npm", "npm_audit", "Run npm audit and list vulnerable dependencies with their severity",
     obj({"directory": s("Project directory"), "level": s("Least severity", ["low", "moderate", "high", "critical"])})),
    ("docs", "docs_search", "Search the official documentation of a library or framework for a topic",
     obj({"library": s("Library"), "topic": s("What to look for")}, ["library", "topic"])),
    ("docs", "docs_fetch_page", "Fetch one page of a library's documentation by its path",
     obj({"library": s("Library"), "path": s("Page path")}, ["library", "path"])),
    # Misc dev tools
    ("dev", "run_tests", "Run the project's test suite, or some of its tests, and report failures",
     obj({"selector": s("Test file, name or marker"), "fail_fast": {"type": "boolean", "description": "Stop at first"}})),
    ("dev", "coverage_report", "Report test coverage per file and the lines not covered",
     obj({"min_percent": i("Only files below this")})),
    ("dev", "format_code", "Format source files with the project's formatter (black, prettier, rustfmt)",
     obj({"paths": {"type": "array", "items": s("Path")}})),
    ("dev", "git_blame", "Show who last changed each line of a file and in which commit",
     obj({"path": s("File"), "start_line": i("From"), "end_line": i("To")})),
    ("dev", "git_log", "Show the commit history of the repository or of one path",
     obj({"path": s("Path"), "max_count": i("Most commits")})),
    ("dev", "git_diff", "Show the diff of the working tree, the index or between two commits",
     obj({"base": s("Base revision"), "target": s("Target revision")})),
    ("dev", "git_commit", "Commit staged changes with a message",
     obj({"message": s("Commit message"), "amend": {"type": "boolean", "description": "Amend"}})),
    ("dev", "git_checkout_branch", "Create or switch to a git branch",
     obj({"branch": s("Branch"), "create": {"type": "boolean", "description": "Create it"}})),
    ("dev", "profile_python", "Profile a Python script with cProfile and list the slowest functions",
     obj({"script": s("Script path"), "args": {"type": "array", "items": s("Argument")}})),
    ("dev", "benchmark_compare", "Compare two benchmark result files and report regressions above a threshold",
     obj({"baseline": s("Baseline file"), "candidate": s("Candidate file"), "threshold_percent": i("Threshold")},
         ["baseline", "candidate"])),
    ("dev", "translate_text", "Translate text between languages",
     obj({"text": s("Text"), "target_language": s("Language code")}, ["text", "target_language"])),
    ("dev", "weather", "Current weather",
     obj({"city": s("City")})),
]

QUERIES: list[tuple[str, str]] = [
    ("Open a GitHub issue in acme/shop about the flaky checkout test", "create_issue"),
    ("Why did the last CI workflow run on main fail? Re-run it if it was a flake", "list_workflow_runs"),
    ("Scale the payments deployment to 5 replicas in the staging namespace", "kubectl_scale"),
    ("Show me the logs of the api pod, it keeps crashing", "kubectl_logs"),
    ("Which tables does the orders database have, and what columns does orders_items have?", "pg_describe_table"),
    ("Post a short summary of this change to the #release channel on Slack", "slack_post_message"),
    ("Create a Jira bug in project PAY for the rounding error in invoices", "jira_create_ticket"),
    ("What does the latest Sentry error for the web project look like? Show the stack trace", "sentry_get_event"),
    ("Upload the generated report.csv to the analytics S3 bucket", "s3_put_object"),
    ("Run the unit tests for the parser and tell me what fails", "run_tests"),
    ("Rename src/util.py to src/helpers.py", "move_path"),
    ("Find every Python file under src that imports requests", "grep"),
    ("Plan the terraform changes for the network module before we apply them", "terraform_plan"),
    ("How many weekly downloads does the left-pad npm package have?", "npm_package_info"),
    ("Schedule a 30 minute meeting with alice@example.com tomorrow at 10", "calendar_create_event"),
    ("Take a screenshot of the login page after navigating to http://localhost:3000", "browser_screenshot"),
    ("Who changed line 40 of app/models.py last?", "git_blame"),
    ("Roll back the frontend deployment, the new version is broken", "kubectl_rollout_undo"),
    ("Search the React docs for useEffect cleanup", "docs_search"),
    ("Explain the query plan of SELECT * FROM orders WHERE customer_id = 7", "pg_explain"),
]


def specs() -> list[McpToolSpec]:
    """The catalog as tool specs (mcp-style ids), in the order above."""
    return [_spec(server, name, description, schema) for server, name, description, schema in TOOLS]


async def _never(_parsed: Any, _ctx: Any) -> ToolOutput:
    raise AssertionError("catalog test tools are never run")


def _spec(server: str, name: str, description: str, schema: dict[str, Any]) -> McpToolSpec:
    return McpToolSpec(
        id=f"mcp__{server}__{name}", name=name, description=description, params=McpArguments,
        effect=Effect.READ_ONLY, kind="other", execute=_never, title=lambda _a: name,
        redaction=redaction(), server=server, tool=name, schema=schema,
    )
