# frozen_string_literal: true

require "tmpdir"

# exe/rusty_stdlib-bench: a user's own files through the stdlib and ours, outputs
# compared before timing (the ratios themselves are not checked: timing is bench/'s).
RSpec.describe "rusty_stdlib-bench" do
  exe = File.expand_path("../exe/rusty_stdlib-bench", __dir__)

  it "compares every operation on a JSON file and times it" do
    Dir.mktmpdir do |dir|
      file = File.join(dir, "doc.json")
      File.write(file, %({"a":[1,2.5,"x\\u00e9",null,true],"b":{"c":"d"}}))
      out, err, status = Open3.capture3({ "RUSTY_STDLIB" => ENV.fetch("RUSTY_STDLIB", nil) }, RbConfig.ruby, "-w", "-I", Subprocess::LIB,
                                        exe, "--seconds=0.01", file)
      expect([err, status.success?]).to eq(["", true])
      rows = out.lines.grep(/\Adoc\.json/)
      expect(rows.map { |row| row[41, 16].strip }).to eq(["sha256", "md5", "json parse", "json generate",
                                                          "marshal dump", "marshal load"])
      modules = %i[digest digest json json marshal marshal]
      rows.zip(modules).each do |row, module_name|
        expect(row).not_to include("DIFFERENT")
        # Ours where it is installed or pending here (the tool requires json itself).
        expected = %i[installed pending].include?(RustyStdlib.status[module_name]) ? /\d\.\d\dx$/ : /skipped: #{module_name} not installed/
        expect(row.chomp).to match(expected)
      end
    end
  end
end
