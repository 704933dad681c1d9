/*
Package jsonschema provides json-schema compilation and validation.

It is github.com/santhosh-tekuri/jsonschema/v5 at v5.3.1 (Apache License
2.0, see LICENSE), copied with one change: each draft's meta-schema is
compiled the first time a schema needs it (Draft.getMeta), not all five
in the package's init. That init was a sixth of the CPU of every start of
workspaced, most of whose commands compile no schema. Only the files the
project builds are copied, without the upstream tests and the httploader,
and four lines changed for go vet and staticcheck: an enum's message is
printed with %s (upstream used it as the format), and three rewrites with
no change in behaviour.

Features:
  - implements draft 2020-12, 2019-09, draft-7, draft-6, draft-4
  - fully compliant with JSON-Schema-Test-Suite, (excluding some optional)
  - list of optional tests that are excluded can be found in schema_test.go(variable skipTests)
  - validates schemas against meta-schema
  - full support of remote references
  - support of recursive references between schemas
  - detects infinite loop in schemas
  - thread safe validation
  - rich, intuitive hierarchial error messages with json-pointers to exact location
  - supports output formats flag, basic and detailed
  - supports enabling format and content Assertions in draft2019-09 or above
  - change Compiler.AssertFormat, Compiler.AssertContent to true
  - compiled schema can be introspected. easier to develop tools like generating go structs given schema
  - supports user-defined keywords via extensions
  - implements following formats (supports user-defined)
  - date-time, date, time, duration (supports leap-second)
  - uuid, hostname, email
  - ip-address, ipv4, ipv6
  - uri, uriref, uri-template(limited validation)
  - json-pointer, relative-json-pointer
  - regex, format
  - implements following contentEncoding (supports user-defined)
  - base64
  - implements following contentMediaType (supports user-defined)
  - application/json
  - can load from files/http/https/string/[]byte/io.Reader (supports user-defined)

The schema is compiled against the version specified in "$schema" property.
If "$schema" property is missing, it uses latest draft which currently implemented
by this library.

You can force to use specific draft,  when "$schema" is missing, as follows:

	compiler := jsonschema.NewCompiler()
	compiler.Draft = jsonschema.Draft4

This package supports loading json-schema from filePath and fileURL.

To load json-schema from HTTPURL, register a loader in Loaders.

you can validate yaml documents. see https://play.golang.org/p/sJy1qY7dXgA
*/
package jsonschema
