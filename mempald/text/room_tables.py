"""The room tables: the conversation rooms and their keywords (the taxonomy), and the folder -> room table.

Pure data (stdlib only), read by ``classify.classify_room`` and ``classify.room_for_path``; a user's config can
replace the keyword table.
"""

from __future__ import annotations

FALLBACK_ROOM = "general"  # where a text goes when no room scores; in every wing, so never a tunnel
CONVO_ROOMS: tuple[str, ...] = ("technical", "architecture", "planning", "decisions", "problems", FALLBACK_ROOM)

# The taxonomy: room -> keywords. A plain dict of lists so a user's config can replace or extend it.
# "general" has no keywords: it is where a text goes when nothing else scores.
DEFAULT_ROOM_KEYWORDS: dict[str, list[str]] = {
    "technical": [
        "code", "python", "javascript", "typescript", "rust", "function", "class", "method", "api", "deploy",
        "database", "query", "sql", "compile", "library", "package", "install", "docker", "endpoint", "script",
        "regex", "git", "commit", "test", "variable", "import", "config", "cli", "json",
    ],
    "architecture": [
        "architecture", "design", "pattern", "schema", "structure", "module", "component", "interface",
        "abstraction", "layer", "microservice", "monolith", "dependency", "coupling", "refactor", "diagram",
        "data model", "protocol", "boundary", "separation of concerns",
    ],
    "planning": [
        "plan", "roadmap", "milestone", "sprint", "deadline", "priority", "backlog", "timeline", "schedule",
        "estimate", "next step", "todo", "scope", "goal", "phase", "release plan", "mvp",
    ],
    "decisions": [
        "decided", "decide", "decision", "chose", "choose", "switched", "trade-off", "tradeoff", "went with",
        "instead of", "opted", "settled on", "alternative", "pros and cons", "rather than", "go with",
    ],
    "problems": [
        "problem", "issue", "broken", "fix", "fixed", "solved", "crash", "failing", "failure", "workaround",
        "root cause", "regression", "stuck", "doesn't work", "bug", "error",
    ],
    "general": [],
}


# Folder name (or a short path of folder names) -> room. Matching is case-insensitive on whole path
# segments; a name like "web-ui" also matches through its parts ("web", "ui").
FOLDER_ROOMS: dict[str, str] = {
    # frontend
    "frontend": "frontend", "front-end": "frontend", "client": "frontend", "ui": "frontend", "web": "frontend",
    "webapp": "frontend", "components": "frontend", "src/components": "frontend", "pages": "frontend",
    "views": "frontend", "templates": "frontend", "static": "frontend", "public": "frontend",
    "styles": "frontend", "css": "frontend", "scss": "frontend", "layouts": "frontend", "widgets": "frontend",
    "assets": "frontend",
    # backend
    "backend": "backend", "back-end": "backend", "server": "backend", "api": "backend", "services": "backend",
    "handlers": "backend", "controllers": "backend", "routes": "backend", "models": "backend",
    "middleware": "backend", "migrations": "backend", "graphql": "backend", "rpc": "backend",
    "workers": "backend", "src/server": "backend", "src/api": "backend",
    # documentation
    "docs": "documentation", "doc": "documentation", "documentation": "documentation", "wiki": "documentation",
    "guides": "documentation", "guide": "documentation", "manual": "documentation", "handbook": "documentation",
    "adr": "documentation", "adrs": "documentation", "rfc": "documentation", "rfcs": "documentation",
    "tutorials": "documentation",
    # testing
    "tests": "testing", "test": "testing", "testing": "testing", "spec": "testing", "specs": "testing",
    "__tests__": "testing", "e2e": "testing", "qa": "testing", "fixtures": "testing", "cypress": "testing",
    "playwright": "testing", "bench": "testing", "benchmarks": "testing", "tests/unit": "testing",
    "tests/integration": "testing",
    # planning
    "planning": "planning", "roadmap": "planning", "strategy": "planning", "plans": "planning",
    "milestones": "planning", "backlog": "planning", "okrs": "planning", "proposals": "planning",
    # configuration
    "config": "configuration", "configs": "configuration", "configuration": "configuration",
    "settings": "configuration", "conf": "configuration", ".github": "configuration",
    ".github/workflows": "configuration", ".circleci": "configuration", ".gitlab": "configuration",
    ".devcontainer": "configuration", ".husky": "configuration",
    # scripts
    "scripts": "scripts", "bin": "scripts", "tools": "scripts", "utils": "scripts", "util": "scripts",
    "tooling": "scripts", "tasks": "scripts", "hack": "scripts", "devtools": "scripts",
    # design
    "design": "design", "designs": "design", "figma": "design", "mockups": "design", "wireframes": "design",
    "sketches": "design", "ux": "design", "branding": "design", "icons": "design",
    # meetings
    "meetings": "meetings", "meeting-notes": "meetings", "minutes": "meetings", "standup": "meetings",
    "standups": "meetings", "retro": "meetings", "retros": "meetings", "retrospectives": "meetings",
    "agendas": "meetings", "1on1": "meetings", "one-on-ones": "meetings",
    # costs
    "costs": "costs", "budget": "costs", "budgets": "costs", "invoices": "costs", "pricing": "costs",
    "billing": "costs", "finance": "costs", "expenses": "costs",
    # infrastructure
    "infra": "infrastructure", "infrastructure": "infrastructure", "terraform": "infrastructure",
    "k8s": "infrastructure", "kubernetes": "infrastructure", "helm": "infrastructure",
    "charts": "infrastructure", "deploy": "infrastructure", "deployment": "infrastructure",
    "deployments": "infrastructure", "ansible": "infrastructure", "docker": "infrastructure",
    "ops": "infrastructure", "devops": "infrastructure", "pulumi": "infrastructure",
    "cloudformation": "infrastructure", "nginx": "infrastructure",
    # data
    "data": "data", "datasets": "data", "dataset": "data", "db": "data", "sql": "data", "seeds": "data",
    "dumps": "data", "etl": "data", "pipelines": "data", "schemas": "data",
    # research
    "research": "research", "notebooks": "research", "experiments": "research", "papers": "research",
    "analysis": "research", "literature": "research", "prototypes": "research", "spikes": "research",
    "poc": "research", "explorations": "research",
}
