"""Redaction precision on a labelled set (issues #17 point 4 and #22 point 4): real-shaped secrets in the
contexts they turn up in (shell history, .env files, config, curl and database command lines, prose), every
one of which must be caught, and look-alikes (placeholders, hashes, UUIDs, public keys, example values from
docs) of which no more than 2 may be redacted. None of the secrets below is real; each has the exact shape
of its kind."""

from __future__ import annotations

import pytest

from mempald.text.redact import redact

PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACDl0wAwZ2JfQ2p9Wq8Xk3Lm7Np4Qr1St6Uv9Wx2Yz5Ab8Cd0Ef3Gh6Ij9Kl\n-----END OPENSSH PRIVATE KEY-----")
AZURE = "Xk9Lm2Np7Qr4St8Uv1Wx6Yz3Ab5Cd0Ef9Gh2Ij7Kl4Mn1Op8Qr5St2Uv9Wx6Yz3Ab0Cd7Ef4Gh1Ij8Kl5Mn2Op9Qr6S=="

# (text, the secret in it)
SECRETS: list[tuple[str, str]] = [
    ("export AWS_ACCESS_KEY_ID=AKIA2E0A8F3B244C9986", "AKIA2E0A8F3B244C9986"),
    ("aws_secret_access_key = Jz8Wq2Xv9Lk4Np7Rt1Ys6Bd3Fh5Gm0Cc8Ve2Ua4i", "Jz8Wq2Xv9Lk4Np7Rt1Ys6Bd3Fh5Gm0Cc8Ve2Ua4i"),
    ("git remote add origin https://ghp_R8tA2kq9ZxLm4VbN7cPw3yHs6JdE1fGu0iTo@github.com/acme/app.git",
     "ghp_R8tA2kq9ZxLm4VbN7cPw3yHs6JdE1fGu0iTo"),
    ("GITHUB_TOKEN=github_pat_11AJ3KQ5Y0vQ9mZ2xW7bT4_kLpR8sN3dF6gH1jU0yT5eW2qA9zX7cV4bN1mK8lP3oI6uY0tR5e",
     "github_pat_11AJ3KQ5Y0vQ9mZ2xW7bT4_kLpR8sN3dF6gH1jU0yT5eW2qA9zX7cV4bN1mK8lP3oI6uY0tR5e"),
    ("the OAuth token gho_16C7e42F292c6912E7710c838347Ae178B4a expired", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("git clone https://oauth2:glpat-xK9mP2vL7qR4tY8wZ3nB@gitlab.com/acme/app.git", "glpat-xK9mP2vL7qR4tY8wZ3nB"),
    ("SLACK_BOT_TOKEN=xoxb-2718281828-3141592653589-QwErTyUiOpAsDfGhJkLzXcVb",
     "xoxb-2718281828-3141592653589-QwErTyUiOpAsDfGhJkLzXcVb"),
    ("curl -X POST https://hooks.slack.com/services/T02ABCDEF/B03GHIJKL/Xy7Kp2Lm9Qr4Tv8Wz1Ns6Dh3 -d '{}'",
     "Xy7Kp2Lm9Qr4Tv8Wz1Ns6Dh3"),
    ('stripe.api_key = "sk_live_51HxYz2KqLm9Np8Rt7Vw6Xy5Za4Bc3De2Fg1Hi0"',
     "sk_live_51HxYz2KqLm9Np8Rt7Vw6Xy5Za4Bc3De2Fg1Hi0"),
    ("STRIPE_WEBHOOK_SECRET=whsec_5Fh8Jk2Lm9Np4Qr7St1Uv3Wx6Yz0Ab8Cd", "whsec_5Fh8Jk2Lm9Np4Qr7St1Uv3Wx6Yz0Ab8Cd"),
    ("restricted key rk_live_51HxYz2KqLm9Np8Rt7Vw6Xy5Za4Bc3De for the reports job",
     "rk_live_51HxYz2KqLm9Np8Rt7Vw6Xy5Za4Bc3De"),
    ("OPENAI_API_KEY=sk-proj-Tq8Zk3Xm2Lv9Np4Rw7Ys1Bd6Fh0Gj5Kc3Ve8Ua2Iy7Ot4Ep9_Wq-Xz5",
     "sk-proj-Tq8Zk3Xm2Lv9Np4Rw7Ys1Bd6Fh0Gj5Kc3Ve8Ua2Iy7Ot4Ep9_Wq-Xz5"),
    ('client = OpenAI(api_key="sk-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789abcdEFGH")',
     "sk-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789abcdEFGH"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-Xk9Lm2Np7Qr4St8Uv1Wx6Yz3Ab5Cd0Ef9Gh2Ij-Kl7Mn4Op1Qr",
     "sk-ant-api03-Xk9Lm2Np7Qr4St8Uv1Wx6Yz3Ab5Cd0Ef9Gh2Ij-Kl7Mn4Op1Qr"),
    ('<script src="https://maps.googleapis.com/maps/api/js?key=AIzaSyB7x9Kq2Lm4Np6Rt8Vw1Xy3Za5Bc7De9Fg">',
     "AIzaSyB7x9Kq2Lm4Np6Rt8Vw1Xy3Za5Bc7De9Fg"),
    ("HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567", "hf_aBcDeFgHiJkLmNoPqRsTuVwXyZ01234567"),
    ("huggingface-cli login --token hf_XyZ9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9u", "hf_XyZ9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9u"),
    ("//registry.npmjs.org/:_authToken=npm_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2",
     "npm_Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2"),
    ("twine upload -u __token__ -p "
     "pypi-AgEIcHlwaS5vcmcCJGE4YjM2ZTk1LTBjYjAtNDQ4Zi05YmMwLTk5NDMxZjg4Mzk3NAACKlsz dist/*",
     "pypi-AgEIcHlwaS5vcmcCJGE4YjM2ZTk1LTBjYjAtNDQ4Zi05YmMwLTk5NDMxZjg4Mzk3NAACKlsz"),
    ("docker login -u acme -p dckr_pat_2b3e36beeb386dfdaacb9b46004ccb7c registry.example.com",
     "dckr_pat_2b3e36beeb386dfdaacb9b46004ccb7c"),
    ("SENDGRID_API_KEY=SG.xK9mP2vL7qR4tY8wZ3nB5c.Dh7Jk2Lm9Np4Qr8St1Uv3Wx6Yz0Ab5Cd7Ef9Gh2Ij4Kl",
     "SG.xK9mP2vL7qR4tY8wZ3nB5c.Dh7Jk2Lm9Np4Qr8St1Uv3Wx6Yz0Ab5Cd7Ef9Gh2Ij4Kl"),
    ("MAILGUN_KEY=key-3ax6xnjp29jd6fds4gc373sgvjxteol0", "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"),
    ("TWILIO_AUTH_TOKEN=5f1c8a9e2b7d4c6f0a3e9b8d7c6a5f4e", "5f1c8a9e2b7d4c6f0a3e9b8d7c6a5f4e"),
    ("Authorization: Bearer eyJhbGciOiJSUzI1NiIsImtpZCI6IjE2In0.eyJzdWIiOiJ1c2VyLTQyIiwiZXhwIjoxNzYwMDAwMDAwfQ."
     "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA", "Zm9vYmFyYmF6cXV4cXV1eHF1dXhxdXV4cXV1eA"),
    (f"cat ~/.ssh/id_ed25519\n{PEM}", "QyNTUxOQAAACDl0wAwZ2JfQ2p9Wq8Xk3Lm7Np4Qr1St6Uv9Wx2Yz5Ab8Cd0Ef3Gh6Ij9Kl"),
    ("DATABASE_URL=postgres://app:Xk9_p4ss_2026@db.internal:5432/app", "Xk9_p4ss_2026"),
    ("REDIS_URL=redis://:Rp4ssw0rd@cache.internal:6379/0", "Rp4ssw0rd"),
    ("MONGO_URI=mongodb+srv://admin:M0ng0Pa55@cluster0.ab1cd.mongodb.net/app", "M0ng0Pa55"),
    ("curl -u admin:S3cretPass https://api.internal/v1/jobs", "S3cretPass"),
    ("curl --user deploy:d3pl0y-T0ken -X POST https://ci.internal/hooks", "d3pl0y-T0ken"),
    ("# .env\nDB_HOST=db.internal\nDB_PASS=hunter2x\nDB_PORT=5432", "hunter2x"),
    ("PGPASSWORD=Pg_s3cret_99 psql -h db -U app", "Pg_s3cret_99"),
    ("mysql -u root -pS3cr3tDB app < dump.sql", "S3cr3tDB"),
    ("mysqldump --password=Dump-P4ss-77 shop > shop.sql", "Dump-P4ss-77"),
    ("password is Jicarilla12484", "Jicarilla12484"),
    ("Authorization: Basic YWRtaW46UzNjcmV0UGFzcw==", "YWRtaW46UzNjcmV0UGFzcw=="),
    ("curl -H 'x-api-key: 8f14e45fceea167a5a36dedd4bea2543a2b3c4d5' https://api.x.io",
     "8f14e45fceea167a5a36dedd4bea2543a2b3c4d5"),
    (f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={AZURE};EndpointSuffix=core.windows.net", AZURE),
    ("SECRET_KEY = 'django-insecure-9x#k2@m7!p4q&r8t1w^z6n3b5c0v'", "django-insecure-9x#k2@m7!p4q&r8t1w^z6n3b5c0v"),
    ("SHOPIFY_ACCESS_TOKEN=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", "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"),
    ("doctl auth init -t dop_v1_4f9c2a7e1b8d3c6f0a5e9b2d7c4a1f8e3b6d0c9a2f5e8b1d4c7a0f3e6b9d2c5a",
     "dop_v1_4f9c2a7e1b8d3c6f0a5e9b2d7c4a1f8e3b6d0c9a2f5e8b1d4c7a0f3e6b9d2c5a"),
    ("TELEGRAM_BOT_TOKEN=7123456789:AAH3kLm9Np2Qr7St4Uv8Wx1Yz6Ab3Cd0Ef5g", "AAH3kLm9Np2Qr7St4Uv8Wx1Yz6Ab3Cd0Ef5g"),
    ("machine api.heroku.com\n  login me@example.org\n  password 7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
     "7a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d"),
    ("export VAULT_TOKEN=hvs.CAESIJ9Xk2Lm7Np4Qr8St1Uv3Wx6Yz0Ab5Cd7Ef9Gh2Ij4",
     "hvs.CAESIJ9Xk2Lm7Np4Qr8St1Uv3Wx6Yz0Ab5Cd7Ef9Gh2Ij4"),
    ("GOOGLE_CLIENT_SECRET=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", "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"),
    ("psql 'postgresql://report:r3p0rt!Pw@10.0.0.5/metrics'", "r3p0rt!Pw"),
]

LOOKALIKES: list[str] = [
    "export OPENAI_API_KEY=your-key-goes-here",
    "X-Api-Token: local-demo",
    "OPENAI_API_KEY=sk-...",
    "ANTHROPIC_API_KEY=<your-anthropic-key>",
    "token: ${{ secrets.GITHUB_TOKEN }}",
    "password=${DB_PASSWORD}",
    "AWS_SECRET_ACCESS_KEY=REPLACE_ME",
    'token: "xxxxxxxxxxxxxxxxxxxx"',
    'api_key = "YOUR_API_KEY_HERE"',
    "SECRET_KEY=changeme",
    "DB_PASS=",
    'password: "********"',
    "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b.",
    "digest sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request id 550e8400-e29b-41d4-a716-446655440000 failed",
    "md5 d41d8cd98f00b204e9800998ecf8427e  package.tgz",
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR5zRsQCXRvrjBQUw=="',
    "FROM nginx@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7vbqajDhA5k2ZpXjq9Rq3m6 dev@laptop",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n"
    "-----END CERTIFICATE-----",
    "STRIPE_PUBLISHABLE_KEY=pk_live_51HxYz2KqLm9Np8Rt7Vw6Xy5Za4Bc3De2Fg1Hi0",
    "gtag('config', 'G-XXXXXXXXXX'); ga('create', 'UA-12345678-1', 'auto');",
    "assume arn:aws:iam::123456789012:role/deploy in account 123456789012",
    "Set max_tokens=4096 and token_count: 123456",
    "PASSWORD_MIN_LENGTH=12",
    "password = get_password()",
    "password=password",
    "the password is required and the password is wrong",
    "passwords must be at least 12 characters; tokens expire after 3600 seconds",
    "Use scikit-learn (sk-learn) with the task-runner.",
    "color: #3f7868; background: #ffffff",
    "https://example.com/docs?page=2&token=",
    "![chart](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==)",
    "Access key IDs begin with AKIA and secret keys are 40 characters long.",
    "export NODE_ENV=production",
    'SECRET_KEY_BASE=<%= ENV["SECRET_KEY_BASE"] %>',
    "api_key: str | None = None",
    'token = os.environ["HF_TOKEN"]',
    'curl -u "$API_USER:$API_PASS" https://api.example.com',
    "mysql -u root -p app",
    "echo $TOKEN | docker login -u me --password-stdin registry.example.com",
    "postgres://user:password@localhost/db",
    "redis://localhost:6379/0",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "SLACK_BOT_TOKEN=xoxb-your-token-here",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $ACCESS_TOKEN",
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393",
    "private_key_path = ~/.ssh/id_ed25519",
    '"sessionId": "8c880a68-969b-4b92-8733-a4927179d072"',
    "Chunk ID: 182295, Wall time: 0.0000 seconds",
    "posted in <#C061A1R2R|general> by <@U061A1R2R>",
    "HF_TOKEN=hf_xxx",
    "the token expired; ask for a new token",
    # from the real transcripts of ../shared (an aider history and two Claude Code sessions)
    "async def verify(api_key: Annotated[str | None, Depends(api_key_header)]) -> bool:",
    """curl -d '{"companyName": "Aider Test Corp", "apiKey": "a-long-secure-api-key-string"}'""",
    """curl -d '{"companyName": "Aider Test Corp", "apiKey": "thisIsAWrongApiKey123"}'""",
    "WHITELISTED_WALLET_PRIVATE_KEY=sua_chave_privada_aqui_sem_0x",
    "WHITELISTED_WALLET_PRIVATE_KEY=<whitelisted-wallet-private-key>",
    "EMAIL_PASSWORD=[SendGrid API key]",
    "NEXTAUTH_SECRET=[generated secret]",
    "NEXTAUTH_SECRET=local_dev_secret",
    "EMAIL_PASSWORD=app_specific_password",
    "- Password: Minimum 12 characters, hashed with bcrypt",
]


def test_the_set_is_large_enough() -> None:
    assert len(SECRETS) >= 40 and len(LOOKALIKES) >= 40
    assert len({s for _, s in SECRETS}) == len(SECRETS)


@pytest.mark.parametrize(("text", "secret"), SECRETS, ids=[s[:24] for _, s in SECRETS])
def test_every_secret_is_caught(text: str, secret: str) -> None:
    out, counts = redact(text)
    assert secret not in out, out
    assert counts and "[REDACTED:" in out


def test_look_alikes_are_kept() -> None:
    redacted = [(t, redact(t)[0]) for t in LOOKALIKES if redact(t)[0] != t]
    assert len(redacted) <= 2, "\n".join(f"{a!r} -> {b!r}" for a, b in redacted)


@pytest.mark.parametrize("text", LOOKALIKES)
def test_each_look_alike(text: str) -> None:
    """Which look-alikes are redacted (at most 2 may be; see the test above). None is today."""
    assert redact(text) == (text, {})
