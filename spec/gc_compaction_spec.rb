# frozen_string_literal: true

# A compacting GC moves objects: every Ruby object the extension keeps between calls (key
# caches, the stdlib methods a swap replaced, parse and dump tables) must stay pinned or be
# looked up afresh. Each module's work runs in a child process with compaction on every GC
# and forced compactions (GC.verify_compaction_references moves every object it can) in
# between, with rusty_stdlib and without it; the results must agree.
RSpec.describe "rusty_stdlib under a compacting GC" do
  script = <<~'RUBY'
    require "json"; require "digest"; require "net/http"; require "stringio"
    GC.auto_compact = true
    verify = RUBY_VERSION >= "3.2" ? { expand_heap: true, toward: :empty } : { double_heap: true, toward: :empty }
    random = Random.new(20_261_201)
    doc = Array.new(300) do |i|
      { "id" => i, "name" => "user #{random.rand(1000)}", "tags" => %w[a bb ccc].sample(2, random: random),
        "score" => random.rand.round(6), "nested" => { "ok" => i.even?, "note" => nil, "x" => "é" * (i % 5) } }
    end
    text = JSON.generate(doc)
    dumped = Marshal.dump(doc)
    sha = Digest::SHA256.new
    head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n" \
           "Content-Type: text/plain\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
    results = []
    12.times do |i|
      GC.verify_compaction_references(**verify) if i % 4 == 0
      results << (JSON.parse(text) == doc) << JSON.generate(JSON.parse(text, symbolize_names: true)).bytesize
      results << JSON.pretty_generate(doc.first(5)) << JSON.parse(text, freeze: true).frozen?
      results << (Marshal.load(dumped) == doc) << (Marshal.dump(Marshal.load(dumped)) == dumped)
      sha << "chunk #{i}"
      results << sha.hexdigest << Digest::MD5.hexdigest("x#{i}")
      io = Net::BufferedIO.new(StringIO.new(head.b))
      res = Net::HTTPResponse.read_new(io)
      res.reading_body(io, true) {}
      results << res.body << res.to_hash << Net::HTTP::Get.new("/", "x-a" => "1").each_capitalized.to_a
      results << URI.encode_www_form(a: "b c", d: "é") << URI.decode_www_form("a=b+c&d=%C3%A9")
      GC.compact if i.odd?
    end
    results << (JSON.generate(JSON.parse(text)) == text)
    print Marshal.dump(results)
  RUBY

  it "gives the stdlib's results with objects moved under it" do
    ((ours, ours_err), (stdlib, stdlib_err)) = run_with_and_without_ours do |with_ours|
      (with_ours ? %(require "rusty_stdlib"\n) : "") + script
    end
    expect([ours_err, stdlib_err]).to eq(["", ""])
    expect(ours).to eq(stdlib)
    expect(ours.size).to eq(12 * 13 + 1)
    expect(ours).not_to include(false)
  end
end
