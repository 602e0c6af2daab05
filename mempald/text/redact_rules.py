"""The shapes ``mempald.text.redact`` replaces (pure: stdlib only), and what is never a secret.

Three kinds of rule, each ``(kind, pattern, group holding the secret, validator)``:

- **token shapes**: credentials with a fixed prefix or structure (``ghp_``, ``sk-ant-``, ``hf_``, ``dckr_pat_``,
  ``xoxb-``, AWS key ids, JWTs...), redacted wherever they appear unless they are obviously filler
  (``ghp_xxxx...``, ``xoxb-your-token-here``);
- **contexts**: a secret that has no shape of its own but sits where only a secret goes: ``curl -u user:PASS``,
  ``mysql -pPASS``, ``docker login -p TOKEN``, an environment variable named ``*_PASSWORD`` / ``*_TOKEN`` /
  ``*_KEY``..., ``AccountKey=``, a Slack webhook's last segment, a Telegram bot token, "password is X";
- **assignments**: ``password=...``, ``"api_key": "..."``, ``token: ...`` in code, config and JSON.

What is a real value of a kind and what is a placeholder (``${VAR}``, ``your-key-goes-here``, ``ghp_xxxx``) or
public (``pk_`` keys, public keys, hashes, UUIDs) is decided by the validators of ``redact_values``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from mempald.text.redact_values import (
    age_ok,
    b64_private_key_ok,
    basic_pair_ok,
    bearer_ok,
    discord_ok,
    env_key_ok,
    env_ok,
    flag_ok,
    has_digit,
    not_placeholder,
    openai_ok,
    password_ok,
    pgpass_ok,
    slack_ok,
    stdin_ok,
    token_ok,
)

PH = r"(?!\[REDACTED:)"  # never re-redact a placeholder
_B = r"(?<![A-Za-z0-9_\-])"  # characters that may sit right before/after a token without being part of it
_E = r"(?![A-Za-z0-9_\-])"

class Rule(NamedTuple):
    """One shape: ``kind`` (the placeholder's name), the pattern, the group holding the secret, its validator,
    and ``needles``: strings of which every match holds one (in the casefolded text with ``fold``, for a pattern
    that ignores case), so that a text holding none is not scanned (most texts hold none; the scans were a third
    of reading a transcript). A needle must be a part of every match: ``"-u"`` for ``-u|--user``. A ``fold``
    needle holds no "i": a pattern that ignores case matches "İ" and "ı" for it, which casefold leaves apart."""

    kind: str
    rx: re.Pattern[str]
    group: int
    ok: Callable[[str], bool] | None
    needles: tuple[str, ...] = ()
    fold: bool = False


_B64_END = r"(?![A-Za-z0-9+/=_\-])"
_DISCORD_ID = ("MT", "Mj", "Mz", "ND", "NT", "Nj", "Nz", "OD", "OT")  # base64 of the id's first digit, 1-9

TOKEN_RULES: list[Rule] = [
    # Slack file-download URLs carry a token in the query string: keep the parameter, drop the token.
    Rule("slack_download_token", re.compile(r"([?&]t=)" + PH + r"(xox[a-z]-[A-Za-z0-9%\-]{10,})"), 2, None, ("xox",)),
    Rule("anthropic_key", re.compile(_B + r"(sk-ant-[A-Za-z0-9_\-]{20,})" + _E), 1, token_ok, ("sk-ant-",)),
    Rule("openai_key", re.compile(_B + r"(sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,})" + _E), 1, openai_ok,
     ("sk-",)),
    Rule("github_token", re.compile(r"(?<![A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,255})(?![A-Za-z0-9_])"), 1, token_ok,
     ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
    Rule("github_token", re.compile(r"(?<![A-Za-z0-9_])(github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"), 1, token_ok,
     ("github_pat_",)),
    # (the literal first, then the look-behind: the scan looks for "gl" instead of trying every position)
    Rule("gitlab_token", re.compile(r"(gl(?<![A-Za-z0-9_\-]..)(?:pat|rt|dt|ptt|cbt|ft|imt|agent|soat|oas|ffct|rtr)-"
                                    r"[A-Za-z0-9_\-]{20,})" + _E), 1, token_ok, ("gl",)),
    Rule("slack_token", re.compile(_B + r"(xox[abposre]-[A-Za-z0-9\-]{10,})" + _E), 1, slack_ok, ("xox",)),
    Rule("slack_token", re.compile(_B + r"(xapp-\d-[A-Za-z0-9\-]{10,})" + _E), 1, slack_ok, ("xapp-",)),
    Rule("slack_webhook",
         re.compile(r"(hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/)" + PH + r"([A-Za-z0-9]{20,})"), 2, None,
         ("hooks.slack.com/services/",)),
    Rule("stripe_key", re.compile(r"(?<![A-Za-z0-9_])((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})(?![A-Za-z0-9_])"), 1,
     token_ok, ("_live_", "_test_")),
    Rule("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(whsec_[A-Za-z0-9]{24,})(?![A-Za-z0-9_])"), 1, token_ok,
     ("whsec_",)),
    Rule("gcp_api_key", re.compile(_B + r"(AIza[0-9A-Za-z_\-]{35})" + _E), 1, token_ok, ("AIza",)),
    Rule("google_client_secret", re.compile(_B + r"(GOCSPX-[A-Za-z0-9_\-]{20,})" + _E), 1, token_ok, ("GOCSPX-",)),
    Rule("huggingface_token", re.compile(r"(?<![A-Za-z0-9_])(hf_[A-Za-z0-9]{30,})(?![A-Za-z0-9_])"), 1, token_ok,
     ("hf_",)),
    Rule("docker_token", re.compile(_B + r"(dckr_pat_[A-Za-z0-9_\-]{20,})" + _E), 1, token_ok, ("dckr_pat_",)),
    Rule("npm_token", re.compile(r"(?<![A-Za-z0-9_])(npm_[A-Za-z0-9]{36})(?![A-Za-z0-9_])"), 1, token_ok, ("npm_",)),
    Rule("pypi_token", re.compile(_B + r"(pypi-AgE[A-Za-z0-9_\-]{40,})" + _E), 1, None, ("pypi-AgE",)),
    Rule("sendgrid_key", re.compile(_B + r"(SG\.[A-Za-z0-9_\-]{16,32}\.[A-Za-z0-9_\-]{16,64})" + _E), 1, token_ok,
     ("SG.",)),
    Rule("mailgun_key", re.compile(_B + r"(key-[0-9a-z]{32})" + _E), 1, token_ok, ("key-",)),
    Rule("shopify_token", re.compile(r"(?<![A-Za-z0-9_])(shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32})(?![A-Za-z0-9_])"), 1, None,
     ("shp",)),
    Rule("digitalocean_token", re.compile(r"(?<![A-Za-z0-9_])(do[por]_v1_[a-f0-9]{64})(?![A-Za-z0-9_])"), 1, None,
     ("_v1_",)),
    Rule("vault_token", re.compile(_B + r"(hv[sb]\.[A-Za-z0-9_\-]{24,})" + _E), 1, token_ok, ("hvs.", "hvb.")),
    Rule("telegram_bot_token", re.compile(r"(?<![\d:])(\d{8,10}:)" + PH + r"(AA[A-Za-z0-9_\-]{32,})" + _E), 2, None,
     (":AA",)),
    Rule("google_oauth_token", re.compile(_B + r"(ya29\.[A-Za-z0-9_\-.]{20,})" + _E), 1, token_ok, ("ya29.",)),
    Rule("google_oauth_token", re.compile(r"(?<![A-Za-z0-9_/:])(1//0[A-Za-z0-9_\-]{30,})" + _E), 1, token_ok,
         ("1//0",)),
    Rule("atlassian_token", re.compile(_B + r"((?:ATATT|ATCTT|ATOAT)[A-Za-z0-9_\-=]{50,})" + _E), 1, token_ok,
         ("ATATT", "ATCTT", "ATOAT")),
    Rule("supabase_key", re.compile(r"(?<![A-Za-z0-9_])(sb_secret_[A-Za-z0-9_\-]{20,})" + _E), 1, token_ok,
         ("sb_secret_",)),
    Rule("supabase_key", re.compile(r"(?<![A-Za-z0-9_])(sbp_[a-f0-9]{40})(?![A-Za-z0-9_])"), 1, token_ok, ("sbp_",)),
    Rule("newrelic_key", re.compile(r"(NR(?<![A-Za-z0-9_\-]..)(?:AK|AA|II|IQ|RA|SP|AZ)-[A-Za-z0-9_\-]{20,})" + _E), 1,
         token_ok, ("NR",)),
    Rule("age_secret_key", re.compile(r"(?<![A-Za-z0-9])(AGE-SECRET-KEY-1[0-9A-Z]{50,})(?![A-Za-z0-9])"), 1, age_ok,
         ("AGE-SECRET-KEY-1",)),
    Rule("age_secret_key", re.compile(r"(?<![A-Za-z0-9])(AGE-PLUGIN-[A-Z0-9]+-1[0-9A-Z]{20,})(?![A-Za-z0-9])"), 1,
         age_ok, ("AGE-PLUGIN-",)),
    Rule("databricks_token", re.compile(r"(?<![A-Za-z0-9_])((?:dapi|dose)[a-f0-9]{32}(?:-\d)?)(?![A-Za-z0-9_])"), 1,
         None, ("dapi", "dose")),
    Rule("sentry_token", re.compile(_B + r"(sntry[su]_[A-Za-z0-9+/=_]{40,})" + _B64_END), 1, token_ok, ("sntry",)),
    # Discord bot tokens: base64 of the bot's id, a timestamp, an HMAC (checked: the first part decodes to digits)
    Rule("discord_token", re.compile(r"((?:M[Tjz]|N[DTjz]|O[DT])(?<![A-Za-z0-9_\-.]..)[A-Za-z0-9_\-]{21,26}\."
                                     r"[A-Za-z0-9_\-]{6}\.[A-Za-z0-9_\-]{27,40})(?![A-Za-z0-9_\-.])"), 1, discord_ok,
         _DISCORD_ID),
    Rule("discord_webhook", re.compile(r"(discord(?:app)?\.com/api/webhooks/\d+/)" + PH + r"([A-Za-z0-9_\-]{40,})"), 2,
         None, ("/api/webhooks/",)),
    Rule("twitch_token", re.compile(r"(?<![A-Za-z0-9_])(oauth:)" + PH + r"([a-z0-9]{30})(?![A-Za-z0-9_])"), 2,
         has_digit, ("oauth:",)),
    # signed URLs: an Azure SAS signature, S3 and GCS presigned URLs (the signature is the credential)
    Rule("signed_url", re.compile(r"([?&;]sig=)" + PH + r"([A-Za-z0-9%+/=]{20,})"), 2, None, ("sig=",)),
    Rule("signed_url", re.compile(r"(X-(?:Amz|Goog)-Signature=)" + PH + r"([a-f0-9]{64,})"), 2, None,
         ("-Signature=",)),
    # a PuTTY key's private lines and MAC
    Rule("private_key", re.compile(r"(Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|(?:\\r)?\\n))" + PH
                                   + r"([A-Za-z0-9+/=]+(?:(?:\r?\n|(?:\\r)?\\n)[A-Za-z0-9+/=]+(?=[\r\n\\]|$))*)"),
         2, None, ("Private-Lines:",)),
    Rule("private_key", re.compile(r"(Private-MAC:[ \t]*)" + PH + r"([0-9a-fA-F]{40,})"), 2, None, ("Private-MAC:",)),
    # base64 of a PEM private key (kubeconfig client-key-data, a Secret's tls.key, an env var)
    Rule("private_key", re.compile(r"(?<![A-Za-z0-9+/])(LS0tLS1CRUdJTi[A-Za-z0-9+/]{20,}={0,2})(?![A-Za-z0-9+/=])"), 1,
         b64_private_key_ok, ("LS0tLS1CRUdJTi",)),
    Rule("private_key", re.compile(r"((?:client-key-data|tls\.key|ssh-privatekey)[\"']?[ \t]*:[ \t]*[\"']?)" + PH
                                   + r"([A-Za-z0-9+/]{40,}={0,2})"), 2, None,
         ("client-key-data", "tls.key", "ssh-privatekey")),
    # registry credentials: a Docker config's "auth" (base64 user:secret), .dockerconfigjson, npm's _auth
    Rule("registry_auth", re.compile(r"(\"auth\"[ \t]*:[ \t]*\")" + PH + r"([A-Za-z0-9+/]{8,}={0,2})\""), 2,
         basic_pair_ok, ('"auth"',)),
    Rule("registry_auth", re.compile(r"(\.dockerconfigjson[\"']?[ \t]*:[ \t]*[\"']?)" + PH
                                     + r"([A-Za-z0-9+/]{20,}={0,2})"), 2, None, (".dockerconfigjson",)),
    Rule("registry_auth", re.compile(r"(?<![A-Za-z0-9])(eyJhdXRocyI6[A-Za-z0-9+/]{20,}={0,2})(?![A-Za-z0-9+/=])"), 1,
         None, ("eyJhdXRocyI6",)),
    Rule("registry_auth", re.compile(r"((?<![A-Za-z0-9])_auth[ \t]*=[ \t]*[\"']?)" + PH + r"([A-Za-z0-9+/]{8,}={0,2})"),
         2, basic_pair_ok, ("_auth",)),
    Rule("aws_access_key", re.compile(
        r"(?<![A-Za-z0-9])((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
     1, None, ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA", "APKA")),
    Rule("aws_secret_key", re.compile(
        r"((?:aws_?)?secret_?(?:access_?)?key[\"']?\s*[:=]>?\s*[\"']?)" + PH
        + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", re.I), 2, None, ("secret_", "secreta", "secretk"), fold=True),
    Rule("azure_key", re.compile(r"((?:Account|Shared)Key=)" + PH + r"([A-Za-z0-9+/]{40,}={0,2})"), 2, None, ("Key=",)),
    Rule("jwt", re.compile(_B + r"(eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})" + _E), 1, None,
     ("eyJ",)),
    Rule("bearer_token",
         re.compile(r"(\b(?i:bearer)\s+)" + PH + r"([A-Za-z0-9\-._~+/]{16,}=*)(?![A-Za-z0-9\-._~+/=])"), 2, bearer_ok,
         ("bearer",), fold=True),
    Rule("basic_auth", re.compile(r"(\bAuthorization\s*[:=]\s*[\"']?\s*Basic\s+)" + PH
                              + r"([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", re.I), 2, None,
     ("author",), fold=True),
    # Authorization: Token / SSWS (Okta) / Bot / ApiKey / GenieKey ... (Bearer and Basic above)
    Rule("auth_header", re.compile(r"(\bAuthorization\s*[:=]\s*[\"']?\s*(?:Token|SSWS|Bot|Key|ApiKey|Api-Key|GenieKey"
                                   r"|Splunk|OAuth|Client-ID|DSN)\s+)" + PH
                                   + r"([A-Za-z0-9\-._~+/%:]{12,}=*)(?![A-Za-z0-9\-._~+/%:=])", re.I), 2, bearer_ok,
         ("author",), fold=True),
    # a session cookie in a Cookie / Set-Cookie header or curl -b / --cookie
    Rule("session_cookie", re.compile(r"((?:\b(?:set-)?cookie[ \t]*:[ \t]*|(?<![\w-])(?:-b|--cookie)(?: +|=)[\"']?)"
                                      r"(?:[^;\n\"'=\s]+=[^;\n\"']*;[ \t]*)*?"  # the cookies before it, whole
                                      r"[\w.\-]*(?:sess|sid|auth|token|jwt|remember)[\w.\-]*=)" + PH
                                      + r"([^;\s\"',]{16,})", re.I), 2, bearer_ok, ("cook", "-b ", "-b="), fold=True),
]

_SECRET_ENV = (r"(?:PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|AUTH|CREDENTIALS?|(?:API|SECRET|PRIVATE|ACCESS|MASTER"
               r"|ENCRYPTION|SIGNING|SESSION|APP|CLIENT|LICENSE|ACCOUNT|WEBHOOK|SHARED|STORAGE|SERVICE|AUTH)_?KEY)")
_ENV_VALUE = r")[ \t]*=[ \t]*([\"']?)" + PH + r"([^\s\"'`]+)\2(?![A-Za-z0-9_])"
# the XML elements only a secret goes in
_XML_SECRET = (r"pass(?:word|wd)?|pwd|secret|token|api[_\-]?key|access[_\-]?key|secret[_\-]?key|client[_\-]?secret"
               r"|private[_\-]?key|auth[_\-]?token|access[_\-]?token|credentials?")
_CLI_FLAG = (r"password|passwd|pass|passphrase|token|auth|auth-token|access-token|api-key|apikey|api-token"
             r"|client-secret|secret-key|private-token")
# what reads a secret on its standard input: --password-stdin, gh --with-token, sudo -S, chpasswd, a login command
_STDIN_SINK = (r"(?:[^\n;&|]*?--(?:password|token|secret)-stdin\b|[^\n;&|]*?--with-token\b"
               r"|(?:sudo\s+(?:-\w+\s+)*)?(?:chpasswd|kinit|passwd\s+--stdin)\b|sudo\s+(?:-\w+\s+)*?-\w*S\b"
               r"|(?:docker|podman|nerdctl|helm|buildah|skopeo|oras|crane|regctl|gh|glab|heroku|vercel|netlify|flyctl"
               r"|fly|npm|pnpm|yarn|cf|oc|argocd|vault|op|bw)\s+(?:[^\n;&|]*?\s)?login(?![\w.\-]))")

CONTEXT_RULES: list[Rule] = [
    # curl -u user:PASS, curl --user user:PASS (also wget --password, httpie -a user:PASS)
    Rule("cli_password", re.compile(r"(?<![\w-])(?:-u|--user|-a|--auth)(?:\s+|=)(['\"]?)[^\s'\":]*:" + PH
                                + r"([^\s'\"]+)\1"), 2, not_placeholder, ("-u", "-a")),
    # mysql -pPASS (-p followed by a space prompts for it instead)
    Rule("cli_password", re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mariadb|mariadb-dump)\b[^\n|;]*?\s-p" + PH
                                + r"([^\s'\"-][^\s'\"]*)"), 1, not_placeholder, ("mysql", "mariadb")),
    # docker login -p TOKEN / --password TOKEN (not --password-stdin)
    Rule("cli_password", re.compile(r"\b(?:docker|podman|nerdctl|helm|buildah|skopeo)\s+(?:registry\s+)?login\b"
                                r"[^\n|;]*?\s(?:-p|--password)(?:\s+|=)" + PH + r"([^\s'\"]+)"), 1, not_placeholder,
     ("login",)),
    # .env and shell: DB_PASS=..., PGPASSWORD=..., MAILGUN_KEY=... (not *_PUBLIC_KEY, *_PUBLISHABLE_KEY)
    Rule("env_secret", re.compile(r"(?<![A-Za-z0-9_])((?!\w*PUBLI)[A-Z][A-Z0-9_]*" + _SECRET_ENV + _ENV_VALUE), 3,
         env_ok, ("PASS", "PWD", "SECRET", "TOKEN", "KEY", "AUTH", "CREDENTIAL")),
    # any other *_KEY (CACHE_KEY, SORT_KEY, GPG_KEY): a value that is a name or a key id is not a secret
    Rule("env_secret", re.compile(r"(?<![A-Za-z0-9_])((?!\w*PUBLI)[A-Z][A-Z0-9_]*KEY" + _ENV_VALUE), 3, env_key_ok,
         ("KEY",)),
    # prose and .netrc: "password is X", "password X"
    Rule("password", re.compile(r"(?i)\b(?:pass(?:word|wd|phrase)|pwd)(?:[ \t]+(?:is|was))?[ \t]+(['\"]?)" + PH
                            + r"([^\s'\"]{6,})\1"), 2, password_ok,
     ("password", "passwd", "passphrase", "pwd"), fold=True),
    # <password>...</password>, <secret>, <apiKey> (Maven settings.xml, .NET and Java config)
    Rule("xml_secret", re.compile(r"<(" + _XML_SECRET + r")>[ \t]*" + PH + r"([^<\s][^<\n]{3,255}?)[ \t]*</\1>", re.I),
         2, not_placeholder, ("</",)),
    # .pgpass: hostname:port:database:username:password
    Rule("pgpass", re.compile(r"(?m)^([ \t]*(?:[A-Za-z0-9.\-]+|\*):(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:)" + PH
                              + r"(\S+)[ \t]*\r?$"), 2, pgpass_ok, (":",)),
    # sshpass -p PASS, redis-cli -a PASS, ldapsearch -w PASS, mongosh -p PASS, sqlcmd -P PASS
    Rule("cli_password", re.compile(r"\bsshpass\s+(?:-[a-zA-Z]\S*\s+)*?-p[ \t]*(['\"]?)" + PH + r"([^\s'\"]+)\1"), 2,
         flag_ok, ("sshpass",)),
    Rule("cli_password", re.compile(r"\b(?:redis-cli|keydb-cli)\b[^\n|;]*?\s(?:-a|--pass)(?:\s+|=)(['\"]?)" + PH
                                    + r"([^\s'\"]+)\1"), 2, flag_ok, ("-cli",)),
    Rule("cli_password", re.compile(r"\bldap(?:search|add|modify|delete|whoami|passwd|compare|modrdn|exop|url)\b"
                                    r"[^\n|;]*?\s-w\s+(['\"]?)" + PH + r"([^\s'\"]+)\1"), 2, flag_ok, ("ldap",)),
    Rule("cli_password", re.compile(r"\b(?:mongo|mongosh|mongodump|mongorestore|mongoexport|mongoimport|sqlcmd|bcp)\b"
                                    r"[^\n|;]*?\s(?:-p|-P|--password)(?:\s+|=)(['\"]?)" + PH
                                    + r"([^\s'\"-][^\s'\"]*)\1"), 2, flag_ok, ("mongo", "sqlcmd", "bcp")),
    # openssl -passout pass:X / -passin pass:X
    Rule("cli_password", re.compile(r"(?<![\w-])-(?:passout|passin|pass|passwd|password)\s+pass:(['\"]?)" + PH
                                    + r"([^\s'\"]+)\1"), 2, flag_ok, ("pass:",)),
    # --token X, --password=X, --auth-token X, --api-key X (not --password-stdin, --token-file)
    Rule("cli_password", re.compile(r"(?<![\w-])--(?:" + _CLI_FLAG + r")(?:=|[ \t]+)(['\"]?)" + PH
                                    + r"([^\s'\"-][^\s'\"]*)\1(?![\w-])", re.I), 2, flag_ok, ("--",)),
    # a secret echoed into a login command: echo PASS | docker login --password-stdin; ... <<< PASS
    Rule("cli_password", re.compile(r"\b(?:echo|printf)[ \t]+(?:-[neE]{1,3}[ \t]+)*(?:(['\"])%s(?:\\n)?\1[ \t]+)?"
                                    r"(['\"]?)" + PH + r"([^\n|'\"]{3,200}?)\2[ \t]*\|[ \t]*(?=" + _STDIN_SINK + ")"),
         3, stdin_ok, ("echo", "printf")),
    Rule("cli_password", re.compile(r"(?:--(?:password|token|secret)-stdin|--with-token|\bchpasswd|\bkinit|\bsudo\s+"
                                    r"(?:-\w+\s+)*?-\w*S)\b[^\n;&|]*?<<<[ \t]*(['\"]?)" + PH + r"([^\s'\"]{3,200})\1"),
         2, stdin_ok, ("<<<",)),
]

# scheme://user:password@host (the user may be empty: redis://:pw@host): keep the scheme, the user and the host.
URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]{1,30}://[^\s:/@?#\[\]\"'<>]*:)" + PH
                          + r"([^\s/?#\"'<>]+)(@)(?=[^\s/?#\"'<>@]*(?:[\s/?#\"'<>]|$))")

# Generic assignments: password=..., "api_key": "...", SECRET: ..., token = '...'.
ASSIGN_KEYS = {
    "password": r"pass(?:word|wd|phrase)?|pwd|pw",
    "secret": r"(?:client_?)?secret(?:_?key)?",
    "api_key": r"api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key",
    "token": r"(?:access|auth|refresh|session|bearer|api)?[_\-]?token",
}
ASSIGN = re.compile(
    r"(?<![A-Za-z0-9])((?:[A-Za-z0-9]{1,40}[_\-.]){0,6}(" + "|".join(f"(?P<{k}>{v})" for k, v in ASSIGN_KEYS.items())
    + r"))(?P<sep>[\"']?\s*(?::=|=>|[:=])\s*)"
    # A quoted value runs to its closing quote (a passphrase may hold spaces); else up to a delimiter.
    + r"(?:\"" + PH + r"(?P<dq>[^\"\n]{6,256})\"|'" + PH + r"(?P<sq>[^'\n]{6,256})'"
    + r"|(?P<q>[\"']?)" + PH + r"(?P<v>[^\s\"'`,;]{6,}))",
    re.I,
)
ASSIGN_NEEDLES = ("pass", "pw", "secret", "key", "token")  # in the casefolded text: every key holds one
# And a key's last word right before its separator (in the casefolded text): the few texts that hold such a pair
# are scanned, not every text that says "key" or "passed". The assignment pattern tries every word start with
# up to six prefixes; this search is one cheap scan (a backfill spent a tenth of its keyword pass on the former).
ASSIGN_GATE = re.compile(r"(?:word|wd|phrase|pass|pw|secret|key|token)[\"']?\s*[:=]")
URL_NEEDLES = ("://",)
ASSIGN_MIN = {"password": 6, "secret": 8, "api_key": 8, "token": 8}
