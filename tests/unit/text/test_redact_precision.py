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


# --- issue #47 H4 and issue #41 section 7: further shapes, grown by family -------------------------------
# Each family holds the shape the attack used and its siblings (other prefixes of the same vendor, the same
# secret in another format or on another command line). None of the values is real.

PPK = ("PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20261101\nPublic-Lines: 2\n"
       "AAAAC3NzaC1lZDI1NTE5AAAAIJ8ZyC4kTq0lQmv1bW8sXo3p2N6fL9dR7eH5gA1cB0xY\nAAAAB3NzaC1lZDI1NTE5\n"
       "Private-Lines: 1\nAAAAIKh53cecgpfnoFbsM9akH8xBBQk/oc74df/6ApZP2UuL19FL6QXN3Q4atFTCpNk9P\n"
       "Private-MAC: 3a0c68741194f93fd6d3bce58919719a0fc8d530cb26e47bfcbd9c556fb8dbc8")
KUBE_KEY = ("LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFb3dJQkFBS0NBUUVBvYgfX4PeJXXCXCVdpLpo0YGVWUgR2vu1dGHSh"
            "+EmNj2+WTy7AW9RFXJYWmVaaDJfo5Q7E3aJ4XPuUPVS==")
DOCKER_CFG = "eyJhdXRocyI6eyJnaGNyLmlvIjp7ImF1dGgiOiJ5Vi14IpPb+O7oy4iFzJw/4B6OIw5VDhbLx9x+Lt5V/zlE1nEObgPmgg5R/VqfX19"
ATATT = ("ATATT3xFfGF0uEJOy-J6GRoCGCerF5kPBPmHuJUrvkxhwnKfPxl5JmMz-srFENG6dNyd3wI_y5bVFZwwwgBOZMIlMDf8NEL6wwM6LLgN"
         "eiZ2sWXC04xGZPQpW3rl3FEaGdRYMzGigFwTSk-HJVAgH_DnNxYJzJuuOtJ9mKHtYCCwlLs7LenCAn=6FC980AB")
SNTRYS = ("sntrys_eyJpYXQiOjE3NjI0NTA1MjYuODQ4NjM2LCJ1cmwiOiJodHRwczovL3NlbnRyeS5pbyIsInJlZ2lvbl91cmwiOiJodHRwczov"
          "L3VzLnNlbnRyeS5pbyIsIm9yZyI6ImFjbWUifQ_j/zhcPyWbrYVDnFzXG7Y19evtyTSsgeqxwgbTAcrdRG")

SECRET_FAMILIES: dict[str, list[tuple[str, str]]] = {
    "google_oauth": [
        ("gcloud auth print-access-token\nya29.a0AfB_byLnMpv2R-2EHOcW7wWfxxj_0hC7wYarjXaX-6VpZnl10nw-84lYP3zOYjq_Qn"
         "G_lTdYkCAGNohKw_EZ8aZEVnRiunExksvvjlqYSp1LCSlOnezrQlO2T2430_",
         "ya29.a0AfB_byLnMpv2R-2EHOcW7wWfxxj_0hC7wYarjXaX-6VpZnl10nw-84lYP3zOYjq_Qn"),
        ("the service account token ya29.c.b0AaekcyPg2m4pmQ3hQx088pDzd-PsuLjgMfaGSyBVVrz5eMM1o21S-Gf_DIZhdYy1UlSR4ii8"
         " expires in an hour", "ya29.c.b0AaekcyPg2m4pmQ3hQx088pDzd-PsuLjgMfaGSyBVVrz5eMM1o21S"),
        ("refresh with 1//0gSancNgBaegX7ylJYSeiMNg470QlG1VmWWwLddyqCla2212qtW6HsjfEqjcrpqL1_dvsDptK9_6N05xb2__0RVMNYWe"
         "Is7YmneV", "1//0gSancNgBaegX7ylJYSeiMNg470QlG1VmWWwLddyqCla2212qtW6"),
        ("{'refresh_tok': '1//04RsaHSuf09PsIGQ0oAwDKF6RtUoswDPAFfUWw_vyZg8PjHmrAJXoGTpWVCLGPeAL5PosxHRJmLAeIBz--jWctn1"
         "MC0ylBCl1NOV'}", "1//04RsaHSuf09PsIGQ0oAwDKF6RtUoswDPAFfUWw_vyZg8PjHmrAJXoG"),
    ],
    "gitlab": [
        ("gitlab-runner register --token glrt-plO6BplR9ChONWHhjG6C --url https://gitlab.com",
         "glrt-plO6BplR9ChONWHhjG6C"),
        ("runner authentication token: glrt-t1__KO3FQAwyEfdHLzRRwPVxu-jeY7", "glrt-t1__KO3FQAwyEfdHLzRRwPVxu-jeY7"),
        ("deploy token gldt-7SCsNgYOSFZO29rvsSn0 for the registry", "gldt-7SCsNgYOSFZO29rvsSn0"),
        ("curl -X POST -F token=glptt-d28cae9575b7916f0b098d7ee124ce571ce30ef5 -F ref=main https://gitlab.com/api/v4",
         "glptt-d28cae9575b7916f0b098d7ee124ce571ce30ef5"),
    ],
    "atlassian": [
        (f"JIRA_API=me@acme.io:{ATATT}", ATATT[:60]),
        ("curl -u me@acme.io:ATCTT3xFfGN01mlQHDrF-zevdODUDF_Vz2x7Ce07D2c2i_yYyaE-bL9ONWCgBB_4-ZZr1TbRnUXHtgBgHHwVVDrEnr"
         "UgswXIitEP6HmSGbJI77tUrAcmgX-AuVhxE992h-DPCX6rvvzQaz5uL383cv2ZeghnA9yepc=A8F833BF https://acme.atlassian.net",
         "ATCTT3xFfGN01mlQHDrF-zevdODUDF_Vz2x7Ce07D2c2i_yYyaE"),
        (f"Atlassian token {ATATT[:120]} works", ATATT[:100]),
    ],
    "supabase": [
        ("const supabase = createClient(url, 'sb_secret_bJ65xpHV7g_e2kAVzDsA-nLm_yetHsJ')",
         "sb_secret_bJ65xpHV7g_e2kAVzDsA-nLm_yetHsJ"),
        ("supabase login --token sbp_b4ab44dda5c03d523432605c32f035a448741c5d",
         "sbp_b4ab44dda5c03d523432605c32f035a448741c5d"),
    ],
    "new_relic": [
        ("newrelic profiles add --apiKey NRAK-ADV0FEVNQVHJ2YVMQR3P4L0YMCU --region us",
         "NRAK-ADV0FEVNQVHJ2YVMQR3P4L0YMCU"),
        ("insert key NRII-fEioJE94rmbQKfHVVUulGl97RXuLp52H", "NRII-fEioJE94rmbQKfHVVUulGl97RXuLp52H"),
    ],
    "age": [
        ("# created: 2026-11-01T10:00:00Z\n"
         "# public key: age180k42apxaa3pvjzs7cyx7hn6d9xne4hx9mhrkre3sdjdanuu5rf7qpmaus\n"
         "AGE-SECRET-KEY-1KYMA4SCEZ6PXQS7Q5MW0KU0ZHK4V0ZG4XHCSXW4D786KJ0SKZ7NESW8DCL",
         "AGE-SECRET-KEY-1KYMA4SCEZ6PXQS7Q5MW0KU0ZHK4V0ZG4XHCSXW4D786KJ0SKZ7NESW8DCL"),
        ("SOPS_AGE_KEY=AGE-SECRET-KEY-1SFUQ29Y37MHZS75P0DKMTT7VGXGKEX3UQ86YHPSZGTLVLAQYTF4Z0RC8P9 sops -d secrets.yaml",
         "AGE-SECRET-KEY-1SFUQ29Y37MHZS75P0DKMTT7VGXGKEX3UQ86YHPSZGTLVLAQYTF4Z0RC8P9"),
        ("AGE-PLUGIN-YUBIKEY-1NRN0F39L4R866KNLGY8AAPMYJL", "AGE-PLUGIN-YUBIKEY-1NRN0F39L4R866KNLGY8AAPMYJL"),
    ],
    "databricks": [
        ("databricks configure: host https://adb-1234.azuredatabricks.net, dapi771519df761861a84d337553ca808509",
         "dapi771519df761861a84d337553ca808509"),
        ('"pat": "dapi9dba796acb64b0e4bc222d455e26bc6f-2"', "dapi9dba796acb64b0e4bc222d455e26bc6f-2"),
    ],
    "sentry": [
        (f"sentry-cli --auth-token {SNTRYS} releases new 1.2.0", SNTRYS[:80]),
        ("user token 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",
         "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"),
    ],
    "bot_tokens": [
        ("client.run('MTE1NjQ3MDkxMjM0NTY3ODkwMQ.D-0fSM.F8FAl-WB-dPFyQCcYfQPS6exmAiGIWdmU1HTIs')",
         "MTE1NjQ3MDkxMjM0NTY3ODkwMQ.D-0fSM.F8FAl-WB-dPFyQCcYfQPS6exmAiGIWdmU1HTIs"),
        ("old bot token ODg5MTIzNDU2Nzg5MDEyMzQ1.X4aHK9.GXuzY07hL-mMUFkieqIO0lBKzRm", "GXuzY07hL-mMUFkieqIO0lBKzRm"),
        ("Authorization: Bot MTE1NjQ3MDkxMjM0NTY3ODkwMQ.D-0fSM.F8FAl-WB-dPFyQCcYfQPS6exmAiGIWdmU2HTIs",
         "F8FAl-WB-dPFyQCcYfQPS6exmAiGIWdmU2HTIs"),
        ("curl -X POST https://discord.com/api/webhooks/348406982138522185/9xi-gziUe4ii9BuiviyBxBY8ZevygRlI740C_AHvXMwuN"
         "dfyzk3CatF73lgvXKRMZ-lM -d '{}'", "9xi-gziUe4ii9BuiviyBxBY8ZevygRlI740C_AHvXMwuN"),
        ("curl https://api.telegram.org/bot7123456789:AAH3kLm9Np2Qr7St4Uv8Wx1Yz6Ab3Cd0Ef5h/getMe",
         "AAH3kLm9Np2Qr7St4Uv8Wx1Yz6Ab3Cd0Ef5h"),
        ("TWITCH_IRC=oauth:st5hu7vv2mcab5639s1viegxnr5sxu", "st5hu7vv2mcab5639s1viegxnr5sxu"),
    ],
    "signed_urls": [
        ("https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01T00:00:00Z"
         "&st=2026-11-01T00:00:00Z&spr=https&sig=nmn25l%2B27knExMtk1zQuL2yh0hA6UabmykRTRRQE%3D",
         "nmn25l%2B27knExMtk1zQuL2yh0hA6UabmykRTRRQE%3D"),
        ("BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupiytfx"
         "&se=2027-01-01T00:00:00Z&sig=Qm9n2Ls%2Fp8Xr4Tt7Vw1Yz3Ab5Cd0Ef9Gh2Ij7Kl4Mn%3D",
         "Qm9n2Ls%2Fp8Xr4Tt7Vw1Yz3Ab5Cd0Ef9Gh2Ij7Kl4Mn%3D"),
        ("https://acme.s3.amazonaws.com/r.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
         "&X-Amz-Signature=317062dd674fe2592dc9546bb824279be5ed3514f9dedd785d33ac67c1425bbd",
         "317062dd674fe2592dc9546bb824279be5ed3514f9dedd785d33ac67c1425bbd"),
    ],
    "key_files": [
        (PPK, "AAAAIKh53cecgpfnoFbsM9akH8xBBQk/oc74df/6ApZP2UuL19FL6QXN3Q4atFTCpNk9P"),
        (f"users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n"
         f"    client-key-data: {KUBE_KEY}", KUBE_KEY),
        (f"data:\n  tls.crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n  tls.key: {KUBE_KEY[:90]}", KUBE_KEY[:90]),
    ],
    "registry_auth": [
        (f"kind: Secret\ntype: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {DOCKER_CFG}", DOCKER_CFG),
        ('{"auths": {"ghcr.io": {"auth": "YWNtZS1ib3Q6Ums3dk4ycUx4OVR6NFdw"}}}',
         "YWNtZS1ib3Q6Ums3dk4ycUx4OVR6NFdw"),
        ("; ~/.npmrc\n_auth = ZGVwbG95OkhtM3hROHJUMnZMcDlaaw==\nemail = me@acme.io",
         "ZGVwbG95OkhtM3hROHJUMnZMcDlaaw=="),
        ("//npm.pkg.github.com/:_auth=dXNlcjpUUDNhR2hSZWZuME0=", "dXNlcjpUUDNhR2hSZWZuME0="),
    ],
    "auth_headers": [
        ("curl -H 'Authorization: Token 63db52ac363985b98c0809d482adefa4b335a9c2' https://api.acme.io",
         "63db52ac363985b98c0809d482adefa4b335a9c2"),
        ('curl -H "Authorization: SSWS 00pErgjEGqqEoUPY0ZZzFZ0Hr0w_Dw4drcegyOwTZR" https://acme.okta.com/api/v1/users',
         "00pErgjEGqqEoUPY0ZZzFZ0Hr0w_Dw4drcegyOwTZR"),
        ("Authorization: token 9d4ee55d045f4db00e69589d5a3b76ee57803c1b", "9d4ee55d045f4db00e69589d5a3b76ee57803c1b"),
        ("Cookie: theme=dark; session=pd89VtvYQxZAFa5AlPibjDm9WqSNbP29tdoKHjgWjpg; lang=en",
         "pd89VtvYQxZAFa5AlPibjDm9WqSNbP29tdoKHjgWjpg"),
        ("Set-Cookie: connect.sid=s%3AmNo59PA6QEvShoubkH7E9M3tKO3Hi7Uw.W4xdxP2GndbaoGtLRrRVWgR1Yb3mHDX; Path=/; "
         "HttpOnly",
         "mNo59PA6QEvShoubkH7E9M3tKO3Hi7Uw"),
        ("curl -b 'sessionid=k2v9xq7wz3m8p1r6t4y0u5i2o8a3s7d1' https://app.acme.io/admin",
         "k2v9xq7wz3m8p1r6t4y0u5i2o8a3s7d1"),
    ],
    "config_passwords": [
        ("<server>\n  <id>nexus</id>\n  <username>deploy</username>\n  <password>kY1Lnjdzx^!T</password>\n</server>",
         "kY1Lnjdzx^!T"),
        ('<add key="ApiSecret" value="x"/><secret>TP3aGhRefn0M</secret>', "TP3aGhRefn0M"),
        ('{"host": "db.internal", "user": "app", "pass": "6757OzPcOf%J"}', "6757OzPcOf%J"),
        ("smtp:\n  user: mailer\n  pw: lmX88%GW5TjV", "lmX88%GW5TjV"),
        ("db.internal:5432:app:app_user:ZIm5r8tTgL#!", "ZIm5r8tTgL#!"),
        ("cat ~/.pgpass\n*:*:*:postgres:ur8eFYKIf5gJ", "ur8eFYKIf5gJ"),
    ],
    "password_flags": [
        ("sshpass -p 'nucR66A5f03c' ssh deploy@10.0.0.7", "nucR66A5f03c"),
        ("redis-cli -h cache.internal -a IDROu2MPSxf9 ping", "IDROu2MPSxf9"),
        ("openssl pkcs12 -export -in c.pem -inkey k.pem -out c.p12 -passout pass:9Kj5uzHhS2", "9Kj5uzHhS2"),
        ("openssl rsa -in enc.key -passin pass:SMwpAOrZuX2! -out dec.key", "SMwpAOrZuX2!"),
        ("ldapsearch -x -D cn=admin,dc=acme,dc=io -w CNmuOo4HtHGm -b dc=acme,dc=io", "CNmuOo4HtHGm"),
        ("vercel deploy --prod --token Xk9Lm2Np7Qr4St8Uv1Wx6Yz3", "Xk9Lm2Np7Qr4St8Uv1Wx6Yz3"),
        ("netlify deploy --auth=Qm9n2LsPp8Xr4Tt7Vw1Yz3Ab5Cd0Ef9Gh", "Qm9n2LsPp8Xr4Tt7Vw1Yz3Ab5Cd0Ef9Gh"),
        ("mongosh 'mongodb://db.internal/app' -u admin -p Mg0ngoAdm1n", "Mg0ngoAdm1n"),
    ],
    "stdin_secrets": [
        ("echo 'hunter2Reg!' | docker login -u acme --password-stdin registry.acme.io", "hunter2Reg!"),
        ('echo "Pa55-for-ghcr" | docker login ghcr.io -u acme --password-stdin', "Pa55-for-ghcr"),
        ("printf '%s' 'Qz7rT2wLp9x' | helm registry login reg.acme.io -u acme --password-stdin", "Qz7rT2wLp9x"),
        ("docker login -u acme --password-stdin reg.acme.io <<< 'W4xdxP2Gndb'", "W4xdxP2Gndb"),
        ("echo -n Xt7vR2mK9pL | podman login -u acme --password-stdin quay.io", "Xt7vR2mK9pL"),
        ("echo 'Sud0Pass2026' | sudo -S systemctl restart nginx", "Sud0Pass2026"),
        ("echo 'deploy:Chp4sswd2026' | sudo chpasswd", "deploy:Chp4sswd2026"),
    ],
    "dsn": [
        ("DATABASE_URL=postgres://app:p@ss2026w0rd@db.internal:5432/app", "ss2026w0rd"),
        ("mysql://root:S3cr@t!9x@10.0.0.5:3306/shop", "t!9x"),
        ("amqp://guest:R4bb@1tMq77@mq.internal:5672/", "1tMq77"),
    ],
}

LOOKALIKE_FAMILIES: dict[str, list[str]] = {
    "secret_names_without_values": [
        "export OPENAI_API_KEY=\nexport ANTHROPIC_API_KEY=",
        "S3_KEY=S3_BUCKET_KEY_V2",
        "unset AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN",
        "env | grep -E '^(AWS_ACCESS_KEY_ID|AWS_SECRET_ACCESS_KEY)='",
        "CACHE_KEY=user_profile_v2",
        "SORT_KEY=created_at_desc2",
        "PARTITION_KEY=tenant_id",
        "GPG_KEY=0x1A2B3C4D",
        "required env: OPENAI_API_KEY, HF_TOKEN, SENTRY_AUTH_TOKEN",
        "API_KEY_HEADER=X-Api-Key",
    ],
    "pwd_output": [
        "$ pwd\n/home/dev2/projects/app",
        "$ pwd\n/Users/me/src/mempal-2026",
        "pwd && ls build42",
        "Current directory (PWD): /srv/www/site3",
    ],
    "public_halves": [
        "# public key: age180k42apxaa3pvjzs7cyx7hn6d9xne4hx9mhrkre3sdjdanuu5rf7qpmaus",
        "NEXT_PUBLIC_SUPABASE_KEY=sb_publishable_djF2iTFTIyfNfwhNN3RgVGxuyd7DH19",
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lC",
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lD",
        "Public-Lines: 2\nAAAAC3NzaC1lZDI1NTE5AAAAIJ8ZyC4kTq0lQmv1bW8sXo3p2N6fL9dR7eH5gA1cB0xY",
        "SENTRY_DSN=https://9d4ee55d045f4db00e69589d5a3b76ee@o123456.ingest.sentry.io/4506",
        "discord user id 348406982138522185 joined https://discord.gg/acme2026",
        "chat_id=-1001234567890",
    ],
    "placeholders": [
        "echo $REGISTRY_TOKEN | docker login ghcr.io -u acme --password-stdin",
        "printf '%s' \"$CR_PAT\" | docker login ghcr.io -u acme --password-stdin",
        "docker login -u acme --password-stdin < ~/.docker-pass",
        "echo done | tee login.log",
        "sshpass -e ssh deploy@host",
        "sshpass -f ~/.ssh/pass.txt ssh deploy@host",
        "redis-cli -a $REDIS_PASSWORD ping",
        "openssl rsa -in enc.key -passin env:KEY_PASS -out dec.key",
        "ldapsearch -x -W -D cn=admin,dc=acme,dc=io",
        "vercel --token $VERCEL_TOKEN",
        "Authorization: Token <your-api-token>",
        "Authorization: SSWS ${OKTA_API_TOKEN}",
        "Cookie: session=<session-cookie>",
        "<password>${env.NEXUS_PASSWORD}</password>",
        '{"pass": "changeme"}',
        "hostname:port:database:username:password",
        "docker build --secret id=npmrc,src=$HOME/.npmrc .",
        "AGE-SECRET-KEY-1XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "postgres://user:pass@host:5432/db and mailto:me@acme.io",
    ],
    "hashes_and_ids": [
        "bcrypt $2b$12$R9h/cIPz0gi.URNNX3kh2OPST9/PgBkqquzi.Ss7KIUgO2t0jWMUW",
        "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "sha384-oqVuAfXRKap7fdgcCY5uykM6+R9GqQ8K/uxy9rx7HNQlGYl1kPzQho1wx4JwY8wC",
        "trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7",
        "ulid 01HF8Z3K5QX7M2N9P4R6T8V0WB",
        "main.c:10:5: warning: unused variable 'x' [-Wunused-variable]",
        "app/models.py:42:17:E501:line too long",
        "https://github.com/acme/app/compare/3f786850e387550fdab836ed7e6dc881de23001b...da39a3ee5e6b4b0d3255bfef95601890afd80709",
        "Ed25519 fingerprint SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s",
        "job f47ac10b-58cc-4372-a567-0e02b2c3d479 and run 9b2d5c1e-7f3a-4e8b-b6d0-2c4f8a1e3b7d",
        "golang.org/x/net v0.17.0 h1:pVaXccu2ozPjCXewfr1S7xoKoMTcO+ON/GnuQ2dB1dI=",
        "ghcr.io/acme/api@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "Commits 3f78685, da39a3e and e3b0c44 were reverted; resourceVersion: 184736512",
    ],
}

# Vendors' documented example keys have the real shape and are redacted: accepted (issue #41 section 7).
DOCUMENTED_EXAMPLES = ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]

FAMILY_SECRETS = [(f, t, s) for f, rows in SECRET_FAMILIES.items() for t, s in rows]
FAMILY_LOOKALIKES = [(f, t) for f, rows in LOOKALIKE_FAMILIES.items() for t in rows]


def test_documented_example_keys_are_redacted() -> None:
    assert redact(f"aws_access_key_id = {DOCUMENTED_EXAMPLES[0]}")[1] == {"aws_access_key": 1}
    assert redact(f"aws_secret_access_key = {DOCUMENTED_EXAMPLES[1]}")[1] == {"aws_secret_key": 1}


def test_the_families_are_large_enough() -> None:
    assert len(FAMILY_SECRETS) >= 57 and len(FAMILY_LOOKALIKES) >= 45
    assert all(len(rows) >= 2 for rows in SECRET_FAMILIES.values())


@pytest.mark.parametrize(("family", "text", "secret"), FAMILY_SECRETS,
                         ids=[f"{f}-{i}" for f, rows in SECRET_FAMILIES.items() for i in range(len(rows))])
def test_every_family_secret_is_caught(family: str, text: str, secret: str) -> None:
    out, counts = redact(text)
    assert secret not in out, out
    assert counts and "[REDACTED:" in out
    assert redact(out) == (out, {})  # idempotent


@pytest.mark.parametrize(("family", "text"), FAMILY_LOOKALIKES,
                         ids=[f"{f}-{i}" for f, rows in LOOKALIKE_FAMILIES.items() for i in range(len(rows))])
def test_every_family_look_alike_is_kept(family: str, text: str) -> None:
    assert redact(text) == (text, {})
