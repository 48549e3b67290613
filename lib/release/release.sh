# The release job (lib/release): tag RELEASE_SHA as RELEASE_VERSION on the
# forge and push the tag to the mirrors, then print one result line. Run by
# the vault runner's /bin/sh with curl, jq and git; the tokens are files in
# $DISINTO_SECRETS_DIR, never arguments or variables.
set -u
umask 077
secrets="${DISINTO_SECRETS_DIR:-/run/secrets}"
work=/tmp/release
rm -rf "$work" && mkdir -p "$work" || exit 1
v="$RELEASE_VERSION"
sha="$RELEASE_SHA"
api="$RELEASE_FORGE_URL/api/v1/repos/$RELEASE_REPO"
mirrors='{}'
tag=

# result STATUS REASON prints the result line and exits 0, or 1 when the
# release failed.
result() {
	line=$(jq -n -c --arg version "$v" --arg sha "$sha" --arg tag "$tag" --arg status "$1" \
		--arg reason "$2" --argjson mirrors "$mirrors" \
		'{version: $version, sha: $sha, tag: $tag, mirrors: $mirrors, status: $status, reason: $reason}')
	printf 'DISINTO_RELEASE_RESULT %s\n' "$line"
	[ "$1" != failed ]
	exit $?
}

# forge METHOD PATH [BODY_FILE] calls the forge API as the release token;
# the status code is printed, the body left in $work/body.
forge() {
	set -- "$1" "$2" "${3:-}"
	if [ -n "$3" ]; then
		curl -sS -o "$work/body" -w '%{http_code}' -X "$1" -H @"$work/auth" \
			-H 'Content-Type: application/json' --data-binary @"$3" "$api$2"
	else
		curl -sS -o "$work/body" -w '%{http_code}' -X "$1" -H @"$work/auth" "$api$2"
	fi
}

# tagged prints the commit the tag points at, "" when there is none; it
# fails when the forge does not answer plainly.
tagged() {
	code=$(forge GET "/tags/$v") || return 1
	case "$code" in
	200) jq -r '.commit.sha // ""' "$work/body" ;;
	404) echo "" ;;
	*) echo "the forge answered $code to GET tags/$v: $(head -c 200 "$work/body")" >&2; return 1 ;;
	esac
}

[ -r "$secrets/RELEASE_TOKEN" ] || result failed "no RELEASE_TOKEN secret"
printf 'Authorization: token %s\n' "$(cat "$secrets/RELEASE_TOKEN")" >"$work/auth"

echo "release $v of $RELEASE_REPO at $sha"
at=$(tagged) || result failed "cannot read the tag $v"
if [ -n "$at" ] && [ "$at" != "$sha" ]; then
	result failed "the tag $v exists at $at, not $sha: it is never moved"
fi
if [ "$at" = "$sha" ]; then
	tag=existing
	echo "tag $v already at $sha"
else
	jq -n -c --arg t "$v" --arg s "$sha" '{tag_name: $t, target: $s, message: ("Release " + $t)}' >"$work/req"
	code=$(forge POST /tags "$work/req") || result failed "cannot create the tag $v"
	case "$code" in
	201) tag=created ;;
	409 | 422) tag=existing ;; # made meanwhile: checked below
	*) result failed "the forge answered $code to creating the tag $v: $(head -c 200 "$work/body")" ;;
	esac
	at=$(tagged) || result failed "cannot read the tag $v back"
	if [ "$at" != "$sha" ]; then
		tag=
		result failed "the tag $v is at ${at:-nothing}, not $sha"
	fi
	echo "tag $v $tag at $sha"
fi

# gitcred SECRET prints a credential helper answering with that secret.
gitcred() {
	printf '!f() { test "$1" = get || exit 0; echo username=release; printf "password=%%s\\n" "$(cat %s/%s)"; }; f' "$secrets" "$1"
}

# git as the runner's user: no prompt, no system or user configuration.
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
failed=0
i=0
fetched=
while [ "$i" -lt "${RELEASE_MIRROR_COUNT:-0}" ]; do
	eval "name=\$RELEASE_MIRROR_${i}_NAME url=\$RELEASE_MIRROR_${i}_URL secret=\$RELEASE_MIRROR_${i}_SECRET"
	i=$((i + 1))
	if [ -z "$secret" ] || [ ! -r "$secrets/$secret" ]; then
		state=skipped
		echo "mirror $name: skipped (no token declared for it, or not an http(s) URL)"
	else
		if [ -z "$fetched" ]; then
			git init -q --bare "$work/repo.git" &&
				git -C "$work/repo.git" -c credential.helper= -c "credential.helper=$(gitcred RELEASE_TOKEN)" \
					fetch -q "$RELEASE_FORGE_URL/$RELEASE_REPO.git" "refs/tags/$v:refs/tags/$v" &&
				fetched=yes
		fi
		if [ -z "$fetched" ]; then
			state="failed: cannot fetch the tag from the forge"
		elif out=$(git -C "$work/repo.git" -c credential.helper= -c "credential.helper=$(gitcred "$secret")" \
			push -q "$url" "refs/tags/$v:refs/tags/$v" 2>&1); then
			state=ok
		else
			state="failed: $(printf '%s' "$out" | tail -n 2 | tr '\n' ' ' | head -c 300)"
		fi
		echo "mirror $name: $state"
	fi
	case "$state" in failed*) failed=1 ;; esac
	mirrors=$(printf '%s' "$mirrors" | jq -c --arg n "$name" --arg s "$state" '. + {($n): $s}')
done

if [ "$failed" = 1 ]; then
	result partial "a mirror push failed"
fi
result released ""
