#!/bin/sh
# The check-secrets service of docker-compose.yml: every other service waits for it, so the stack
# never starts on an empty, placeholder or malformed secret. Names the variables, never prints
# their values. POSIX sh (alpine/busybox ash, dash).
set -u
# byte-wise lengths and ASCII ranges whatever the image's locale
LC_ALL=C
export LC_ALL

SECRETS="POSTGRES_PASSWORD AIRFLOW_DB_PASSWORD ICEBERG_DB_PASSWORD S3_SECRET_KEY AIRFLOW_JWT_SECRET AIRFLOW_FERNET_KEY SPARK_AUTH_SECRET"
failed=0

refuse() {
    echo "check-secrets: $1" >&2
    failed=$((failed + 1))
}

# A Fernet key is 32 bytes in url-safe base64: 43 characters of [A-Za-z0-9_-] and one "=".
is_fernet_key() {
    body=${1%=}
    [ "$body" != "$1" ] && [ "${#body}" -eq 43 ] || return 1
    case $body in
        *[!A-Za-z0-9_-]*) return 1 ;;
    esac
    return 0
}

for name in $SECRETS; do
    eval "value=\${$name:-}"
    case $value in
        "") refuse "$name is empty" ;;
        *change-me*) refuse "$name still holds the change-me placeholder" ;;
        *)
            if [ "$name" = AIRFLOW_FERNET_KEY ] && ! is_fernet_key "$value"; then
                refuse "$name is not a Fernet key (44 characters of url-safe base64; .env.example shows how to generate one)"
            fi
            ;;
    esac
done

if [ "$failed" -gt 0 ]; then
    echo "check-secrets: $failed secret(s) to set in .env before docker compose up" >&2
    exit 1
fi
echo "secrets ok"
