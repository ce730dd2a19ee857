/*
 * Unit tests: image references hutch_image_import accepts (src/lib/image.c).
 */
#include <criterion/criterion.h>
#include <string.h>

#include <hutch/image.h>

#define OK(r) cr_assert(hutch_image_ref_valid(r), "'%s' is valid", r)
#define BAD(r) cr_assert_not(hutch_image_ref_valid(r), "'%s' is invalid", r)

Test(image_ref, names_and_tags)
{
	OK("busybox");
	OK("my-rootfs:1.0");
	OK("a/b/c:latest");
	OK("my_image__x.y:Tag_1-2");
	OK("a--b");
	OK("0abc:_t");
	BAD("");
	BAD(NULL);
	BAD("Upper:1"); /* names are lowercase */
	BAD("a:");	/* empty tag */
	BAD("a:.t");	/* a tag starts with a word character */
	BAD("a:-t");
	BAD("a:t/x"); /* ':' then '/': not a tag, and ':' in a path */
	BAD("-a");    /* components start and end alphanumeric */
	BAD("a-");
	BAD("a..b");
	BAD("a___b");
	BAD("a//b");
	BAD("/a");
	BAD("a/");
	BAD("a b");
	BAD("a@sha256:00"); /* no digests */
	BAD("a?x=1");	    /* nothing that would change the query */
	BAD("a&b");
	BAD("a%2F");
}

Test(image_ref, registries)
{
	OK("localhost/a:1");
	OK("localhost:5000/a/b:1");
	OK("registry.example.com/team/app:2");
	OK("Registry.Example.com:443/app"); /* hosts may be upper case */
	BAD("localhost:port/a");
	BAD("host:123456/a");
	BAD("-host.com/a");
	BAD("host-.com/a");
	BAD("host..com/a");
	BAD("Upper/a"); /* not a host (no '.' or ':'): a path, not lowercase */
}

Test(image_ref, lengths)
{
	char name[300], ref[500];

	memset(name, 'a', 255);
	name[255] = '\0';
	OK(name);
	memset(name, 'a', 256);
	name[256] = '\0';
	BAD(name);
	memset(ref, 't', sizeof(ref));
	memcpy(ref, "a:", 2);
	ref[2 + 128] = '\0';
	OK(ref);
	ref[2 + 128] = 't';
	ref[2 + 129] = '\0';
	BAD(ref);
}
