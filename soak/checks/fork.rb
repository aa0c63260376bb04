# frozen_string_literal: true

# fork after every module has been used (caches warm, a thread running): each child gets
# the same answers as the parent.
require_relative "../support"

doc = Soak.document(Soak.scale(500, 100))
expected = Soak::describe(Soak.every_module(doc))
busy = Thread.new { loop { JSON.generate(doc.first(20)) && Thread.pass } }
children = Soak.scale(20, 4).times.map do
  fork do
    same = Soak::describe(Soak.every_module(doc)) == expected
    inner = fork { exit!(Soak::describe(Soak.every_module(doc)) == expected ? 0 : 1) }
    Process.wait(inner)
    exit!(same && $?.success? ? 0 : 1)
  end
end
statuses = children.map { |pid| Process.wait2(pid).last }
busy.kill
failed = statuses.count { |s| !s.success? }
Soak.fail!("#{failed} of #{statuses.size} forked children got other results") if failed.positive?
Soak.result("parent after forks", Soak.every_module(doc))
Soak.figure("forked children (each forking one more)", statuses.size)
